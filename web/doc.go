// Package web is vectorflow's read-only web view: the pipelines of each
// config repository, the promotions with what each would change and the
// exact command that approves it, each stage's overlay history and the
// StageVersions it keeps, and the vectors with the stages that run them.
// `vectorflow ui` serves it for one repository; `run --listen` serves it at
// `/` for every repository it reconciles.
//
// # What is true on a page
//
// A page shows only what the trusted keys verify, as `get` and `audit` do:
// Reader checks the state branch's whole history with the controllers'
// public keys (controller.ReadVerifiedState) and, when the tip does not
// verify, shows the state of the last trusted commit with the refusal on
// top. Without any trusted key every page says the state is unverified, and
// no approval is marked verified. A stage's history is controller.Audit's;
// what a promotion would change is controller.DescribePromotion's, the same
// words its pull request uses. The view never writes: approving stays a
// signed commit made with `vectorflow approve`.
//
// # Shape
//
// The pages are pure functions of a Snapshot (one read of a repository)
// and the time: BuildPipeline, BuildPromotionList, BuildPromotionPage,
// BuildStagePage, BuildVectorsPage. Reader is the shell that reads git and
// runs kustomize; NewHandler renders with html/template (every value
// escaped) and serves the embedded stylesheet and one small handwritten
// script, which swaps the page's <main> for a fresh copy when the server
// sends a state event (Broker, server-sent events).
//
// # Who reads
//
// Under `ui`, each Reader reads the config branch and the state branch
// itself, every --ui-refresh. Under `run`, the controller of a repository
// has just read both: it hands each pass to the Reader (Observe), with the
// state branch's tip, its files and the tip's verdict under the
// controller's state signers, and the Reader shows that instead of loading
// the repository a second time. It decodes the files itself, as a read of
// the commit does, and believes the verdict only when it was judged
// against its own keys; a state the controller refused is read and judged
// here, as `ui` does. A fed Reader reads itself only when no pass came for
// FedWithin (a replica that does not reconcile the repository, a
// controller that stopped); until its first feed or FedWithin, it shows
// "not read yet", so that a long first pass is not doubled by a read of
// the view.
//
// # What it reveals, and to whom
//
// Whoever reaches the view sees the repositories' URLs (without
// credentials), landscapes, stages and overlay paths, vectors with every
// component's image, tag and digest, promotions with their conditions,
// approvers' names and approval times, pull request links, the rendered
// objects' kinds, namespaces and names, and the overlay commits with their
// authors. It shows no secret, no key and no manifest content. Auth (a
// token, or users with bcrypt hashes) guards every route; an open view on
// loopback answers to loopback host names only, so that a web site cannot
// read it by DNS rebinding.
package web
