package registry

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSelectTag(t *testing.T) {
	releases := []string{"1.2.0", "1.2.3", "1.4.0", "1.4.7", "1.4.10", "1.5.0-rc.1", "2.0.0", "v1.3.0", "latest", "main", "sha-1a2b3c"}
	notSemver := []string{"latest", "main", "sha-1a2b3c"}
	tests := []struct {
		name    string
		tags    []string
		spec    ComponentVersion
		want    Selection
		wantErr string
	}{
		{name: "x range picks the newest patch, numerically not lexically", tags: releases,
			spec: ComponentVersion{Version: "1.4.x"},
			want: Selection{Tag: "1.4.10", Candidates: 11, Skipped: notSemver}},
		{name: "bounded range excludes prereleases and the upper bound", tags: releases,
			spec: ComponentVersion{Version: ">=1.2.0 <2.0.0"},
			want: Selection{Tag: "1.4.10", Candidates: 11, Skipped: notSemver}},
		{name: "caret range", tags: releases,
			spec: ComponentVersion{Version: "^1.2"},
			want: Selection{Tag: "1.4.10", Candidates: 11, Skipped: notSemver}},
		{name: "a range naming a prerelease admits prereleases", tags: releases,
			spec: ComponentVersion{Version: ">=1.5.0-0 <2.0.0"},
			want: Selection{Tag: "1.5.0-rc.1", Candidates: 11, Skipped: notSemver}},
		{name: "v-prefixed tags are versions", tags: releases,
			spec: ComponentVersion{Version: "~1.3"},
			want: Selection{Tag: "v1.3.0", Candidates: 11, Skipped: notSemver}},
		{name: "semver policy reads a tag-like version as a range", tags: releases,
			spec: ComponentVersion{Version: "1.4", Policy: PolicySemver},
			want: Selection{Tag: "1.4.10", Candidates: 11, Skipped: notSemver}},
		{name: "equal versions go to the greater tag whatever the list order", tags: []string{"v1.2.0", "1.2.0"},
			spec: ComponentVersion{Version: "^1"},
			want: Selection{Tag: "v1.2.0", Candidates: 2}},
		{name: "filter and extract feed the range, the tag is returned whole",
			tags: []string{"app-1.2.0", "app-1.3.0", "other-9.0.0", "app-latest"},
			spec: ComponentVersion{Version: "^1", TagFilter: `^app-(?P<version>.*)$`, Extract: "$version"},
			want: Selection{Tag: "app-1.3.0", Candidates: 3, Skipped: []string{"app-latest"}}},
		{name: "alphabetical asc (default) picks the last, the newest date",
			tags: []string{"2026-01-05", "2026-03-01", "2026-02-10", "main"},
			spec: ComponentVersion{Policy: PolicyAlphabetical, TagFilter: `^\d{4}-\d{2}-\d{2}$`},
			want: Selection{Tag: "2026-03-01", Candidates: 3}},
		{name: "alphabetical desc picks the first",
			tags: []string{"2026-01-05", "2026-03-01", "2026-02-10", "main"},
			spec: ComponentVersion{Policy: PolicyAlphabetical, TagFilter: `^\d{4}-\d{2}-\d{2}$`, Order: "DESC"},
			want: Selection{Tag: "2026-01-05", Candidates: 3}},
		{name: "alphabetical over an extracted timestamp",
			tags: []string{"main-abc-20260105", "main-fff-20260301", "main-000-20260210", "feature-zzz-20991231"},
			spec: ComponentVersion{Policy: PolicyAlphabetical, TagFilter: `^main-[a-f0-9]+-(?P<ts>\d+)$`, Extract: "$ts"},
			want: Selection{Tag: "main-fff-20260301", Candidates: 3}},
		{name: "numerical orders by value: build-100 beats build-9",
			tags: []string{"build-9", "build-10", "build-100", "build-x", "latest"},
			spec: ComponentVersion{Policy: PolicyNumerical, TagFilter: `^build-(\d+)$`, Extract: "$1"},
			want: Selection{Tag: "build-100", Candidates: 3}},
		{name: "numerical desc picks the lowest",
			tags: []string{"build-9", "build-10", "build-100"},
			spec: ComponentVersion{Policy: PolicyNumerical, TagFilter: `^build-(?P<n>\d+)$`, Extract: "${n}", Order: OrderDesc},
			want: Selection{Tag: "build-9", Candidates: 3}},
		{name: "numerical takes decimals", tags: []string{"1.5", "1.25", "0.9"},
			spec: ComponentVersion{Policy: PolicyNumerical},
			want: Selection{Tag: "1.5", Candidates: 3}},
		{name: "numerical refuses a word, as Flux does", tags: []string{"9", "10", "latest"},
			spec:    ComponentVersion{Policy: PolicyNumerical},
			wantErr: `tag "latest" has the value "latest", which is not a number`},
		{name: "bad regexp", tags: releases,
			spec:    ComponentVersion{Policy: PolicyAlphabetical, TagFilter: `^(build`},
			wantErr: `tag filter "^(build" is not a valid regular expression`},
		{name: "extract without a filter", tags: releases,
			spec:    ComponentVersion{Policy: PolicyNumerical, Extract: "$1"},
			wantErr: `needs a tag filter pattern`},
		{name: "unknown order", tags: releases,
			spec:    ComponentVersion{Policy: PolicyAlphabetical, Order: "newest"},
			wantErr: `order "newest" is not one of asc, desc`},
		{name: "unknown policy", tags: releases,
			spec:    ComponentVersion{Version: "1.x", Policy: "calver"},
			wantErr: `policy "calver" is not one of`},
		{name: "not a range", tags: releases,
			spec:    ComponentVersion{Version: ">=1.2.0 <<2", Policy: PolicySemver},
			wantErr: `version ">=1.2.0 <<2" is not a semver range`},
		{name: "an exact tag needs no selection", tags: releases,
			spec:    ComponentVersion{Version: "1.4.7"},
			wantErr: `there is no tag to select`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SelectTag(tt.tags, tt.spec)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("SelectTag() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("SelectTag() error = %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("SelectTag() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSelectTagNoMatch(t *testing.T) {
	tests := []struct {
		name string
		tags []string
		spec ComponentVersion
		want *NoMatchError
	}{
		{name: "range above every tag", tags: []string{"1.0.0", "1.1.0", "latest"},
			spec: ComponentVersion{Version: ">=3.0.0"},
			want: &NoMatchError{Spec: `version ">=3.0.0"`, Tags: 3, Candidates: 3, Skipped: []string{"latest"}}},
		{name: "prereleases only, range without prerelease", tags: []string{"2.0.0-rc.1", "2.0.0-rc.2"},
			spec: ComponentVersion{Version: "2.x"},
			want: &NoMatchError{Spec: `version "2.x"`, Tags: 2, Candidates: 2}},
		{name: "filter keeps nothing", tags: []string{"1.0.0", "main"},
			spec: ComponentVersion{Policy: PolicyNumerical, TagFilter: `^build-(\d+)$`, Extract: "$1"},
			want: &NoMatchError{Spec: `policy numerical (order asc), tag filter "^build-(\\d+)$", extract "$1"`, Tags: 2}},
		{name: "empty repository", tags: nil,
			spec: ComponentVersion{Policy: PolicyAlphabetical},
			want: &NoMatchError{Spec: `policy alphabetical (order asc)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := SelectTag(tt.tags, tt.spec)
			got, ok := err.(*NoMatchError)
			if !ok {
				t.Fatalf("SelectTag() error = %v, want *NoMatchError", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("SelectTag() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
