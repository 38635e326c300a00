package main

import (
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// Shell completion: cobra's own `completion bash|zsh|fish|powershell`
// command writes the script; these functions give it vectorflow's words:
// the kinds, and the names of the objects on the state branch of --repo.

// completeKindAndName completes KIND, then NAME of that kind.
func completeKindAndName(rf *repoFlags) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		switch len(args) {
		case 0:
			var words []string
			for _, k := range getKinds() {
				words = append(words, k.resource.Plural)
				words = append(words, k.resource.ShortNames...)
				words = append(words, k.aliases...)
			}
			return filterPrefix(words, toComplete), cobra.ShellCompDirectiveNoFileComp
		case 1:
			return completeNames(rf, args[0])(cmd, args, toComplete)
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeNames completes the names of the objects of a kind, read from
// the state branch and the config repository of --repo. Completion never
// verifies the state branch (get and describe do) and stays silent: a
// repository it cannot read completes nothing.
func completeNames(rf *repoFlags, kindWord string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		kind, err := lookupGetKind(kindWord)
		if err != nil || rf.repo == "" {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		r, err := newStateReader(cmd, rf, nil, true)
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		r.warned = true // no warning among the completions
		view, err := r.read(cmd.Context())
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		var names []string
		for _, o := range kind.list(view.input(time.Now())) {
			names = append(names, o.name)
		}
		return filterPrefix(names, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

func filterPrefix(words []string, prefix string) []string {
	var out []string
	for _, w := range words {
		if strings.HasPrefix(w, prefix) {
			out = append(out, w)
		}
	}
	return out
}
