package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

// TestGetStageVersionsAndUsages: after a pass over the quickstart (no
// stage names a deployment, so what an overlay names counts as active),
// get stages shows TARGET and ACTIVE, get stageversions the version each
// stage runs with its render, and get usages the stages' own usages.
func TestGetStageVersionsAndUsages(t *testing.T) {
	f := newFlowFixture(t)
	f.run(t)

	var list struct{ Items []v1alpha1.Stage }
	if err := json.Unmarshal([]byte(f.cli(t, "get", "stages", "-o", "json", "--trust", f.controllerPublic)), &list); err != nil {
		t.Fatal(err)
	}
	stages := list.Items
	var dev *v1alpha1.Stage
	for i := range stages {
		if stages[i].Name == "dev" {
			dev = &stages[i]
		}
	}
	if dev == nil || dev.Status.Vector == "" || dev.Status.ActiveVector != dev.Status.Vector || dev.Status.ActiveSince == nil {
		t.Fatalf("dev in get stages -o json: %+v; want status.activeVector = status.vector, with activeSince", dev)
	}
	vector := dev.Status.Vector

	table := f.cli(t, "get", "stages", "--trust", f.controllerPublic)
	if !regexp.MustCompile(`(?m)^STAGE +PATH +TARGET +SINCE +ACTIVE +ACTIVE SINCE`).MatchString(table) ||
		!regexp.MustCompile(`(?m)^dev/dev +apps/overlays/dev +`+regexp.QuoteMeta(vector)+` +\S+ +`+regexp.QuoteMeta(vector)+` `).MatchString(table) {
		t.Errorf("get stages:\n%s", table)
	}

	var versionList struct{ Items []v1alpha1.StageVersion }
	if err := json.Unmarshal([]byte(f.cli(t, "get", "stageversions", "--stage", "dev/dev", "-o", "json", "--trust", f.controllerPublic)), &versionList); err != nil {
		t.Fatal(err)
	}
	versions := versionList.Items
	// The vector the quickstart's overlay named first, and the one
	// latest-to-dev promoted since.
	var current *v1alpha1.StageVersion
	for i := range versions {
		if versions[i].Spec.Vector == vector {
			current = &versions[i]
		}
	}
	if len(versions) != 2 || current == nil || current.Labels[v1alpha1.VectorLabel] != vector ||
		!strings.HasPrefix(current.Spec.RenderDigest, "sha256:") || len(current.Spec.Inventory) == 0 ||
		!meta.IsStatusConditionTrue(current.Status.Conditions, v1alpha1.ReadyCondition) {
		t.Fatalf("get stageversions --stage dev/dev: %+v", versions)
	}
	table = f.cli(t, "get", "stageversions", "--trust", f.controllerPublic)
	if !regexp.MustCompile(`(?m)^` + current.Name + ` +dev/dev +` + regexp.QuoteMeta(vector) + ` +True +NoDeployment +\S+ +active,target `).MatchString(table) {
		t.Errorf("get stageversions:\n%s", table)
	}
	table = f.cli(t, "get", "usages", "--trust", f.controllerPublic)
	for _, want := range []string{`(?m)^dev\.dev\.active +active +` + current.Name + ` +True +- +`, `(?m)^dev\.dev\.target +target +` + current.Name + ` +True +- +`} {
		if !regexp.MustCompile(want).MatchString(table) {
			t.Errorf("get usages has no line %s:\n%s", want, table)
		}
	}
	if _, err := f.cliE("get", "usages", "--stage", "dev"); err == nil {
		t.Error("get usages --stage: no error")
	}
}
