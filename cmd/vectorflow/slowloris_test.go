package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vectorflow-dev/vectorflow/controller"
)

// TestWebhookServerSurvivesSlowLoris: 60 clients on loopback that send a
// webhook body one byte every 500 ms hold no slot past the read timeout,
// the hooks they crowd out answer 503 at once, and /healthz answers
// promptly all along. On main the slow clients were held forever.
func TestWebhookServerSurvivesSlowLoris(t *testing.T) {
	const clients = 60
	limits := serverLimits{
		ReadHeaderTimeout: time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second,
		IdleTimeout: 2 * time.Second, MaxHeaderBytes: 8 << 10, MaxConcurrentHooks: 4,
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrs := make(chan string, 1)
	log := funcr.New(func(_, args string) {}, funcr.Options{})
	log = logr.New(&addressSink{LogSink: log.GetSink(), addrs: addrs})
	secret := writeFile(t, t.TempDir(), "secret", []byte("hunter2\n"))
	reg := prometheus.NewRegistry()
	runner := controller.NewRunner(time.Hour, log)
	srv, err := startServersWithLimits(ctx, runOptions{listen: "127.0.0.1:0", webhookSecretFile: secret}, limits,
		runner, controller.NewMetrics(reg), reg, log)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.shutdown()
	var addr string
	select {
	case addr = <-addrs:
	case <-time.After(5 * time.Second):
		t.Fatal("the server logged no address")
	}

	// The slow clients: headers at once, then one body byte every 500 ms.
	var wg sync.WaitGroup
	held := make(chan time.Duration, clients)
	for i := 0; i < clients; i++ {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("client %d: %v", i, err)
		}
		defer conn.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			fmt.Fprintf(conn, "POST /hooks/github HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-GitHub-Event: push\r\nContent-Length: 1000\r\n\r\n")
			// Trickle until the server hangs up (a write or read fails), or
			// 20 s pass: held for good.
			go func() {
				for time.Since(start) < 20*time.Second {
					if _, err := conn.Write([]byte("{")); err != nil {
						return
					}
					time.Sleep(500 * time.Millisecond)
				}
			}()
			_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
			_, _ = io.Copy(io.Discard, conn)
			held <- time.Since(start)
		}()
	}
	time.Sleep(300 * time.Millisecond) // every slow client has sent its headers

	// A whole hook request while the slots are taken: 503 at once.
	start := time.Now()
	resp, err := http.Post("http://"+addr+"/hooks/github", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a hook request while %d slow ones hold the slots got %d, want 503", limits.MaxConcurrentHooks, resp.StatusCode)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("the 503 took %s, want it at once", d)
	}

	// The probes answer promptly while the slow clients trickle.
	for i := 0; i < 5; i++ {
		start := time.Now()
		client := http.Client{Timeout: 5 * time.Second}
		resp, err := client.Get("http://" + addr + "/healthz")
		if err != nil {
			t.Fatalf("/healthz: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || time.Since(start) > time.Second {
			t.Errorf("/healthz answered %d in %s", resp.StatusCode, time.Since(start))
		}
		time.Sleep(200 * time.Millisecond)
	}

	// Every slow client is let go within the read timeout (plus slack for
	// a loaded machine), none held to the end of its trickle.
	wg.Wait()
	close(held)
	var longest time.Duration
	for d := range held {
		longest = max(longest, d)
	}
	if longest > limits.ReadTimeout+3*time.Second {
		t.Errorf("a slow client was held %s; the read timeout is %s", longest, limits.ReadTimeout)
	}
	t.Logf("longest slow client held %s", longest.Round(time.Millisecond))
}

// addressSink hands on the address the server logs it listens on.
type addressSink struct {
	logr.LogSink
	addrs chan string
}

func (s *addressSink) Info(level int, msg string, kv ...any) {
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i] == "address" && msg == "listening" {
			select {
			case s.addrs <- kv[i+1].(string):
			default:
			}
		}
	}
	s.LogSink.Info(level, msg, kv...)
}

func (s *addressSink) WithValues(kv ...any) logr.LogSink {
	return &addressSink{LogSink: s.LogSink.WithValues(kv...), addrs: s.addrs}
}

func (s *addressSink) WithName(name string) logr.LogSink {
	return &addressSink{LogSink: s.LogSink.WithName(name), addrs: s.addrs}
}
