package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestOneWordPerIdea: every command says "who signs" with --identity and
// "a public key trusted to have signed" with --trust, and run logs with
// Flux's --log-level and --log-encoding. The old names are still accepted
// but hidden from help.
func TestOneWordPerIdea(t *testing.T) {
	for _, tc := range []struct {
		command string
		flags   []string // shown in help
		hidden  []string // old names: accepted, deprecated, not shown
	}{
		{"approve", []string{"identity", "signing-key"}, []string{"as"}},
		{"promote", []string{"identity", "signing-key"}, nil},
		{"run", []string{"identity", "signing-key", "trust", "log-level", "log-encoding", "registry-cache-ttl"}, []string{"trust-state-signer", "log-format", "verbosity"}},
		{"audit", []string{"trust"}, nil},
		{"get", []string{"trust"}, nil},
	} {
		cmd, _, err := newRootCommand().Find([]string{tc.command})
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		cmd.SetOut(&out)
		if err := cmd.Help(); err != nil {
			t.Fatal(err)
		}
		for _, name := range tc.flags {
			if !strings.Contains(out.String(), "--"+name+" ") {
				t.Errorf("%s --help does not show --%s:\n%s", tc.command, name, out.String())
			}
		}
		for _, name := range tc.hidden {
			f := cmd.Flags().Lookup(name)
			if f == nil || f.Deprecated == "" || !f.Hidden {
				t.Errorf("%s --%s: want a hidden, deprecated flag, got %+v", tc.command, name, f)
			}
			if strings.Contains(out.String(), "--"+name+" ") {
				t.Errorf("%s --help shows the old --%s:\n%s", tc.command, name, out.String())
			}
		}
	}
}

// TestDeprecatedFlagAliases runs the commands with old and new flag names
// (and without a repository, so each stops right after reading its flags):
// an old name sets what the new one sets and says on standard error that
// it is deprecated, never on standard output, where results go; a flag given
// under both names with two values is refused, a repeatable one takes both.
func TestDeprecatedFlagAliases(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		want    map[string]string // flag → value after parsing
		notice  string            // on stderr
		wantErr string
	}{
		{
			name: "approve --identity",
			args: []string{"approve", "p-1", "--identity", "Alice <alice@example.com>"},
			want: map[string]string{"identity": "Alice <alice@example.com>"},
		},
		{
			name:   "approve --as",
			args:   []string{"approve", "p-1", "--as", "Alice <alice@example.com>"},
			want:   map[string]string{"identity": "Alice <alice@example.com>"},
			notice: "Flag --as has been deprecated, use --identity instead",
		},
		{
			name:    "approve --as and --identity",
			args:    []string{"approve", "p-1", "--as", "Alice <alice@example.com>", "--identity", "Bob <bob@example.com>"},
			notice:  "Flag --as has been deprecated, use --identity instead",
			wantErr: "--as is the old name of --identity, and both are given; give only --identity",
		},
		{
			name: "run --trust",
			args: []string{"run", "--trust", "a.pub"},
			want: map[string]string{"trust": "[a.pub]"},
		},
		{
			name:   "run --trust-state-signer",
			args:   []string{"run", "--trust-state-signer", "a.pub"},
			want:   map[string]string{"trust": "[a.pub]"},
			notice: "Flag --trust-state-signer has been deprecated, use --trust instead",
		},
		{
			name:   "run --trust and --trust-state-signer add up",
			args:   []string{"run", "--trust", "a.pub", "--trust-state-signer", "b.pub"},
			want:   map[string]string{"trust": "[a.pub,b.pub]"},
			notice: "Flag --trust-state-signer has been deprecated, use --trust instead",
		},
		{
			name: "run logs at info in console by default",
			args: []string{"run"},
			want: map[string]string{"log-level": "info", "log-encoding": "console"},
		},
		{
			name: "run --log-level --log-encoding",
			args: []string{"run", "--log-level", "debug", "--log-encoding", "json"},
			want: map[string]string{"log-level": "debug", "log-encoding": "json"},
		},
		{
			name:   "run --log-format",
			args:   []string{"run", "--log-format", "json"},
			want:   map[string]string{"log-encoding": "json"},
			notice: "Flag --log-format has been deprecated, use --log-encoding instead",
		},
		{
			name:   "run -v 1",
			args:   []string{"run", "-v", "1"},
			want:   map[string]string{"log-level": "debug"},
			notice: "Flag --verbosity has been deprecated, use --log-level instead (-v 1 is --log-level debug)",
		},
		{
			name:   "run --verbosity 2",
			args:   []string{"run", "--verbosity", "2"},
			want:   map[string]string{"log-level": "trace"},
			notice: "Flag --verbosity has been deprecated",
		},
		{
			name:    "run -v and --log-level",
			args:    []string{"run", "-v", "1", "--log-level", "info"},
			notice:  "Flag --verbosity has been deprecated",
			wantErr: "--verbosity is the old name of --log-level, and both are given; give only --log-level",
		},
		{
			name:    "run --log-format and --log-encoding",
			args:    []string{"run", "--log-format", "json", "--log-encoding", "console"},
			notice:  "Flag --log-format has been deprecated",
			wantErr: "--log-format is the old name of --log-encoding, and both are given; give only --log-encoding",
		},
		{
			name:    "run --log-level loud",
			args:    []string{"run", "--log-level", "loud"},
			wantErr: `invalid argument "loud" for "--log-level" flag: use trace, debug, info or error`,
		},
		{
			name:    "run -v -1",
			args:    []string{"run", "-v", "-1"},
			wantErr: `invalid argument "-1" for "-v, --verbosity" flag: want a number from 0 to 127 (or use --log-level)`,
		},
		{
			name: "run leader election: Flux's flags and defaults",
			args: []string{"run"},
			want: map[string]string{"enable-leader-election": "false", "leader-election-lease-duration": "35s",
				"leader-election-renew-deadline": "30s", "leader-election-retry-period": "5s",
				"leader-election-release-on-cancel": "true", "shards": "1", "shard-id": "-1"},
		},
		{
			name: "run --leader-elect is --enable-leader-election",
			args: []string{"run", "--leader-elect"},
			want: map[string]string{"enable-leader-election": "true"},
		},
		{
			name:    "run --log-encoding yaml",
			args:    []string{"run", "--log-encoding", "yaml"},
			wantErr: `--log-encoding "yaml": use console or json`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := newRootCommand()
			var stdout, stderr strings.Builder
			root.SetOut(&stdout)
			root.SetErr(&stderr)
			root.SetArgs(tc.args)
			err := root.Execute()
			if err == nil {
				t.Fatal("ran without a repository")
			}
			if tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %q, want %q", err, tc.wantErr)
			}
			if tc.wantErr == "" && !strings.Contains(err.Error(), "required") {
				t.Errorf("error %q, want one about a required flag after the flags were read", err)
			}
			if stdout.String() != "" {
				t.Errorf("standard output %q, want nothing", stdout.String())
			}
			if tc.notice != "" && !strings.Contains(stderr.String(), tc.notice) {
				t.Errorf("standard error %q, want the notice %q", stderr.String(), tc.notice)
			}
			if tc.notice == "" && strings.Contains(stderr.String(), "deprecated") {
				t.Errorf("standard error %q, want no deprecation notice", stderr.String())
			}
			cmd, _, err := root.Find(tc.args)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for name := range tc.want {
				if f := cmd.Flags().Lookup(name); f != nil {
					got[name] = f.Value.String()
				}
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("flag values (-want +got):\n%s", diff)
			}
		})
	}
}
