// Package kube runs vectorflow on Kubernetes, beside the reconciler and
// never inside it: Git stays the source of truth, and without a kubeconfig
// (or a cluster to run in) nothing here starts.
//
// With one, `vectorflow run` starts a controller-runtime manager and:
//   - campaigns for one Lease per shard; a replica runs the workers of the
//     repositories of the shards whose Lease it holds, and stops them when
//     it loses one, so a repository is reconciled by one replica at a time
//     and a dead replica's shards move within one lease duration;
//   - mirrors each repository's state branch into a namespace as custom
//     resources, read-only: a change made in the cluster is put back, with
//     an Event saying why;
//   - watches the Flux Kustomizations and Argo CD Applications that stages
//     name in spec.deployment and hands what they report to the Runner.
package kube
