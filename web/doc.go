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
