package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/vectorflow-dev/vectorflow/controller"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/internal/testutil/kubetest"
	"github.com/vectorflow-dev/vectorflow/kube"
)

// leaseFlags are short Leases, so a takeover takes seconds, not Flux's 35.
var leaseFlags = []string{"--enable-leader-election",
	"--leader-election-lease-duration", "3s", "--leader-election-renew-deadline", "2s", "--leader-election-retry-period", "250ms"}

const testLeaseDuration = 3 * time.Second

// TestKubernetes runs vectorflow processes against a real kube-apiserver
// and etcd (envtest) and a real git server.
func TestKubernetes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts kube-apiserver, etcd and several vectorflow processes")
	}
	env := kubetest.Start(t, kubetest.Options{})
	clients, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	bin := buildVectorflow(t)
	t.Run("leader killed in a burst of promotions", func(t *testing.T) {
		testLeaderKilled(t, env, clients, bin)
	})
	t.Run("three replicas, three shards, thirty repositories", func(t *testing.T) {
		testShards(t, env, clients, bin)
	})
}

// testLeaderKilled: two processes with leader election; one leads, the
// other runs nothing. The leader is SIGKILLed in the middle of a burst of
// template bumps, each of which makes two promotions; the other takes the
// Lease over within about a lease duration and finishes the burst, and
// every promotion was executed exactly once (one commit with its trailers
// on main), none lost.
func testLeaderKilled(t *testing.T, env *kubetest.Env, clients kubernetes.Interface, bin string) {
	ns := createNamespace(t, clients, "leader")
	f := newFlowFixture(t)
	f.editFile(t, "vectorflow/promotions.yaml", func(s string) string {
		return strings.Replace(s, "required: true", "required: false", 1)
	}, "let dev-to-test run without an approval")
	bare := f.srv.BarePath("acme.git")
	args := append([]string{"run", "--interval", "200ms", "--repo", f.url, "--signing-key", f.controller, "--log-encoding", "json",
		"--metrics-listen", "127.0.0.1:0",
		"--kubeconfig", env.Kubeconfig, "--leader-election-namespace", ns}, leaseFlags...)
	replicas := []*process{startProcess(t, bin, args...), startProcess(t, bin, args...)}
	ids := identities(t, replicas)
	metrics := []string{"http://" + replicas[0].listenAddress(t) + "/metrics", "http://" + replicas[1].listenAddress(t) + "/metrics"}

	leader := waitForHolder(t, clients, ns, kube.LeaseName(0), ids, -1)
	standby := 1 - leader
	const bumps = 6
	var standbyBeforeKill string
	for n := 0; n < bumps; n++ {
		f.bumpServiceA(t, n)
		time.Sleep(400 * time.Millisecond)
		if n == bumps/2 {
			standbyBeforeKill = replicas[standby].logs()
			for repo, passed := range passedBy(t, metrics) {
				if len(passed) != 1 || passed[0] != leader {
					t.Errorf("repository %s was passed over by replicas %v while replica %d led: want the leader only", repo, passed, leader)
				}
			}
			if err := replicas[leader].cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			<-replicas[leader].done
			killedAt := time.Now()
			// The burst goes on while the Lease expires and moves.
			f.bumpServiceA(t, n+1)
			waitForHolder(t, clients, ns, kube.LeaseName(0), ids, standby)
			took := time.Since(killedAt)
			t.Logf("the standby leads %s after the kill", took.Round(time.Millisecond))
			if took > testLeaseDuration+3*time.Second {
				t.Errorf("the standby took %s to take the Lease over, want about the lease duration (%s)", took, testLeaseDuration)
			}
			n++
		}
	}
	for _, word := range []string{`"msg":"transition"`, `"msg":"promoted"`, `"msg":"leading shard`} {
		if strings.Contains(standbyBeforeKill, word) {
			t.Errorf("the standby logged %s while the leader was alive: two replicas reconciled one repository\n%s", word, standbyBeforeKill)
		}
	}
	want := fmt.Sprintf("- name: registry.example.com/acme/service-a\n    newTag: \"1.0.%d\"", bumps+2)
	waitFor(t, 90*time.Second, "dev and test to run the last bump", func() bool {
		for _, stage := range []string{"dev", "test"} {
			overlay, _ := testutil.GitE(bare, nil, "show", "main:apps/overlays/"+stage+"/kustomization.yaml")
			if !strings.Contains(overlay, want) {
				return false
			}
		}
		return true
	})
	waitSettled(t, bare)
	checkPromotionsOnce(t, bare, nil, map[string]bool{"latest-to-dev": true, "dev-to-test": true})
	if t.Failed() {
		t.Logf("killed leader:\n%s\nstandby:\n%s", replicas[leader].logs(), replicas[standby].logs())
	}
}

// testShards: thirty repositories over three shards and three replicas,
// each the StatefulSet pod of one shard. Every repository is reconciled by
// exactly one replica, and when a replica dies another takes its shard
// over and reconciles a change pushed to one of its repositories.
func testShards(t *testing.T, env *kubetest.Env, clients kubernetes.Interface, bin string) {
	const shards, repos = 3, 30
	ns := createNamespace(t, clients, "shards")
	f := newFlowFixture(t)
	var urls []string
	var list strings.Builder
	for i := range repos {
		name := fmt.Sprintf("repo-%02d.git", i)
		testutil.Git(t, f.srv.Root(), nil, "clone", "-q", "--bare", "acme.git", name)
		urls = append(urls, f.srv.HTTPURL(name))
		fmt.Fprintln(&list, f.srv.HTTPURL(name))
	}
	reposFile := writeFile(t, t.TempDir(), "repositories", []byte(list.String()))
	var replicas []*process
	for i := range shards {
		replicas = append(replicas, startProcess(t, bin, append([]string{"run", "--interval", "2s", "--repos-file", reposFile,
			"--metrics-listen", "127.0.0.1:0",
			"--signing-key", f.controller, "--log-encoding", "json", "--kubeconfig", env.Kubeconfig,
			"--leader-election-namespace", ns, "--shards", "3", "--shard-id", fmt.Sprint(i)}, leaseFlags...)...))
	}
	ids := identities(t, replicas)
	metrics := make([]string, len(replicas))
	for i, r := range replicas {
		metrics[i] = "http://" + r.listenAddress(t) + "/metrics"
	}

	// Each repository's first pass assembles a vector and promotes it to
	// dev: transitions its reconciler logs.
	waitFor(t, 120*time.Second, "every repository's first promotion", func() bool {
		return len(reconciledBy(replicas)) == repos
	})
	// Every pass counts in vectorflow_reconcile_duration_seconds: a
	// replica that passed over a repository it does not lead would show.
	time.Sleep(3 * time.Second) // a pass or so more of each
	by := passedBy(t, metrics)
	if len(by) != repos {
		t.Errorf("the replicas' metrics count passes of %d repositories, want %d: %v", len(by), repos, by)
	}
	for _, u := range urls {
		if r := by[u]; len(r) != 1 {
			t.Errorf("repository %s (shard %d) was reconciled by replicas %v, want exactly one", u, controller.ShardOf(u, shards), r)
		}
	}
	holders := map[int]int{}
	for shard := range shards {
		holders[shard] = waitForHolder(t, clients, ns, kube.LeaseName(shard), ids, -1)
	}
	for _, u := range urls {
		if r := by[u]; len(r) == 1 && r[0] != holders[controller.ShardOf(u, shards)] {
			t.Errorf("repository %s was reconciled by replica %d, but its shard %d's Lease is held by replica %d", u, r[0], controller.ShardOf(u, shards), holders[controller.ShardOf(u, shards)])
		}
	}

	// Replica dies; another takes its shard over and reconciles a push.
	dead := holders[0]
	if err := replicas[dead].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-replicas[dead].done
	killedAt := time.Now()
	next := waitForHolder(t, clients, ns, kube.LeaseName(0), ids, -1, dead)
	t.Logf("replica %d took shard 0 over %s after replica %d died", next, time.Since(killedAt).Round(time.Millisecond), dead)
	var moved, movedName string
	for i, u := range urls {
		if controller.ShardOf(u, shards) == 0 {
			moved, movedName = u, fmt.Sprintf("repo-%02d.git", i)
			break
		}
	}
	promotedBefore := promotedIn(replicas[next], moved)
	dir := t.TempDir()
	testutil.Git(t, dir, nil, "clone", "-q", "--branch", "main", f.srv.HTTPURLWithCredentials(movedName), ".")
	template := readFile(t, dir+"/vectorflow/template.yaml")
	writeFile(t, dir+"/vectorflow", "template.yaml", []byte(strings.Replace(template,
		"service-a\n      version: \"1.0.2\"", "service-a\n      version: \"1.0.3\"", 1)))
	testutil.Git(t, dir, nil, "commit", "-qam", "bump service-a")
	testutil.Git(t, dir, nil, "push", "-q", "origin", "main")
	waitFor(t, 60*time.Second, "the new holder of shard 0 to promote the push", func() bool {
		overlay, _ := testutil.GitE(f.srv.BarePath(movedName), nil, "show", "main:apps/overlays/dev/kustomization.yaml")
		return strings.Contains(overlay, "newTag: \"1.0.3\"")
	})
	// The holder logs "promoted" once the pass that pushed the overlay
	// has written its state commit too: a moment after the overlay shows.
	deadline := time.Now().Add(10 * time.Second)
	for promotedIn(replicas[next], moved) <= promotedBefore && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if promotedIn(replicas[next], moved) <= promotedBefore {
		t.Errorf("replica %d holds shard 0 but did not promote the push to %s", next, moved)
	}
	if t.Failed() {
		for i, r := range replicas {
			t.Logf("replica %d:\n%s", i, r.logs())
		}
	}
}

// promotedIn counts the promotions p wrote to repository url.
func promotedIn(p *process, url string) int {
	n := 0
	for _, line := range strings.Split(p.logs(), "\n") {
		var entry struct {
			Msg        string `json:"msg"`
			Repository string `json:"repository"`
		}
		if json.Unmarshal([]byte(line), &entry) == nil && entry.Msg == "promoted" && entry.Repository == url {
			n++
		}
	}
	return n
}

// passedBy maps each repository to the replicas whose metrics count a
// pass of it.
func passedBy(t *testing.T, metrics []string) map[string][]int {
	t.Helper()
	by := map[string][]int{}
	series := 0 // a replica that passed over nothing has none
	for i, url := range metrics {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(body), "\n") {
			const prefix = `vectorflow_reconcile_duration_seconds_count{repository="`
			rest, ok := strings.CutPrefix(line, prefix)
			if !ok {
				continue
			}
			repo, count, _ := strings.Cut(rest, `"} `)
			series++
			if count != "0" {
				by[repo] = append(by[repo], i)
			}
		}
	}
	if series == 0 {
		t.Fatalf("no replica's metrics (%v) count a pass: is vectorflow_reconcile_duration_seconds_count still the name?", metrics)
	}
	return by
}

// reconciledBy maps each repository to the replicas that logged a
// transition of it.
func reconciledBy(replicas []*process) map[string][]int {
	by := map[string][]int{}
	for i, r := range replicas {
		seen := map[string]bool{}
		for _, line := range strings.Split(r.logs(), "\n") {
			var entry struct {
				Msg        string `json:"msg"`
				Repository string `json:"repository"`
			}
			if json.Unmarshal([]byte(line), &entry) != nil || entry.Msg != "transition" || seen[entry.Repository] {
				continue
			}
			seen[entry.Repository] = true
			by[entry.Repository] = append(by[entry.Repository], i)
		}
	}
	return by
}

// identities are the replicas' Lease identities, from their logs.
func identities(t *testing.T, replicas []*process) []string {
	t.Helper()
	ids := make([]string, len(replicas))
	deadline := time.Now().Add(30 * time.Second)
	for {
		for i, r := range replicas {
			for _, line := range strings.Split(r.logs(), "\n") {
				var entry struct {
					Msg      string `json:"msg"`
					Identity string `json:"identity"`
				}
				if json.Unmarshal([]byte(line), &entry) == nil && entry.Identity != "" {
					ids[i] = entry.Identity
				}
			}
		}
		missing := -1
		for i, id := range ids {
			if id == "" {
				missing = i
			}
		}
		if missing < 0 {
			return ids
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica %d did not campaign within 30s:\n%s", missing, replicas[missing].logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitForHolder waits until a replica holds the Lease, want (or any when
// want is -1) and none of not, and returns which.
func waitForHolder(t *testing.T, clients kubernetes.Interface, ns, lease string, ids []string, want int, not ...int) int {
	t.Helper()
	holder := -1
	waitFor(t, 20*time.Second, fmt.Sprintf("Lease %s/%s to be held", ns, lease), func() bool {
		l, err := clients.CoordinationV1().Leases(ns).Get(context.Background(), lease, metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return false
		}
		for i, id := range ids {
			if id == *l.Spec.HolderIdentity && (want < 0 || i == want) && !contains(not, i) {
				holder = i
				return true
			}
		}
		return false
	})
	return holder
}

func contains(list []int, x int) bool {
	for _, v := range list {
		if v == x {
			return true
		}
	}
	return false
}

func createNamespace(t *testing.T, clients kubernetes.Interface, name string) string {
	t.Helper()
	_, err := clients.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return name
}
