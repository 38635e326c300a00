// Package webhook receives change notifications from Git forges (GitHub,
// GitLab, Gitea/Forgejo), from OCI registries (distribution notifications)
// and from deployers (Flux's notification-controller, Argo CD notifications),
// verifies each with the sender's own check, and hands a normalized Event to a
// callback. It decides nothing: which landscape or vector an event touches is
// for the caller to work out from Event.Repositories and Event.Images, and
// which stage a deployer's report concerns from Event.Deployment.
package webhook

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/go-logr/logr"

	"github.com/vectorflow-dev/vectorflow/source/deployments"
)

// Providers, the first path segment after /hooks/ and Event.Provider.
const (
	ProviderGitHub   = "github"
	ProviderGitLab   = "gitlab"
	ProviderGitea    = "gitea"
	ProviderRegistry = "registry"
	ProviderFlux     = "flux"
	ProviderArgoCD   = "argocd"
)

// Event kinds.
const (
	KindPush        = "push"
	KindPullRequest = "pull_request"
	KindReview      = "review"
	KindImagePush   = "image_push"
	KindDeployment  = "deployment"
)

// Results passed to Options.Metrics, one per request.
const (
	ResultAccepted             = "accepted"
	ResultIgnored              = "ignored"
	ResultPing                 = "ping"
	ResultUnauthorized         = "unauthorized"
	ResultMethodNotAllowed     = "method_not_allowed"
	ResultTooLarge             = "too_large"
	ResultBadRequest           = "bad_request"
	ResultUnsupportedMediaType = "unsupported_media_type"
)

// DefaultMaxBodyBytes caps a request body when Options.MaxBodyBytes is zero.
// GitHub caps its own payloads at 25 MB, but the events we read are small; a
// push with thousands of commits is the rare case that gets a 413.
const DefaultMaxBodyBytes int64 = 1 << 20

// Event is one verified notification, normalized across providers.
type Event struct {
	Provider string // github | gitlab | gitea | registry | flux | argocd
	Kind     string // push | pull_request | review | image_push | deployment
	// Repositories are the repository URLs the event names (clone, SSH and web
	// URLs), normalized with NormalizeRepoURL and deduplicated, the clone URL
	// first. Usually one entry; two when, say, SSH listens on a non-default
	// port. For pull requests and reviews it is the target (base) repository.
	Repositories []string
	// Branch is the pushed branch (refs/heads/x -> x). Empty for a push that
	// moved a tag or another non-branch ref.
	Branch string
	// Images are the manifests a registry received, "host/repository" or
	// "host/repository:tag" when pushed by tag, deduplicated. Blob pushes and
	// pulls are not images.
	Images []string
	// PullRequest is the pull request number (GitLab: the merge request iid).
	PullRequest int
	// Deployment is what a deployer (Flux, Argo CD) reports about a revision;
	// set for, and only for, the deployment kind.
	Deployment *deployments.Report
}

// Options configure NewHandler.
type Options struct {
	// Secret is what the sender shares with us: the HMAC key for GitHub,
	// Gitea and Flux, the X-Gitlab-Token value for GitLab, and the
	// Authorization token for the registry and Argo CD. An empty Secret
	// refuses every request (401): an HMAC over an empty key proves nothing.
	Secret []byte
	// MaxBodyBytes caps a request body; larger ones get 413 and are not
	// parsed. Zero means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// OnEvent receives every accepted event, synchronously, before the 202 is
	// written: a sender that got 202 knows its event was handed over. It must
	// not block long (senders time out after a few seconds and retry): enqueue
	// the event and return. It is called from concurrent requests.
	OnEvent func(Event)
	// Logger records refusals and ignored events. The zero value discards.
	Logger logr.Logger
	// Metrics, when set, is called once per request with the provider and
	// one of the Result* constants.
	Metrics func(provider, result string)
}

// NewHandler returns a handler for POST /hooks/github, /hooks/gitlab,
// /hooks/gitea, /hooks/registry, /hooks/flux and /hooks/argocd. It answers:
//   - 202 Accepted for an event handed to OnEvent, and for a verified request
//     whose event type we do not use (ignored, logged): a Flux event of
//     another kind than Kustomization, or with a reason that is no outcome;
//   - 200 for a GitHub ping;
//   - 401 when the signature or token is missing or wrong (nothing parsed);
//   - 405 for any method but POST; 413 for a body over MaxBodyBytes;
//   - 400 for a body that is not the provider's JSON, or lacks the repository
//     or pull request number the event needs, or, for a deployer, the
//     deployment, a full commit id or the time;
//   - 415 for a registry request whose media type is not an events envelope.
//
// Registry authentication: distribution sends whatever headers its endpoint
// configuration names, so configure
//
//	notifications:
//	  endpoints:
//	    - name: vectorflow
//	      url: https://vectorflow.example.com/hooks/registry
//	      headers:
//	        Authorization: [Bearer <secret>]
//
// ("Token <secret>" is accepted too).
//
// Flux: a notification-controller Provider of type generic-hmac whose
// secret's "token" is the webhook secret signs each event with
// "X-Signature: sha256=<hex HMAC-SHA256 of the body>".
//
// Argo CD: its webhook notification service signs nothing, so it sends the
// secret itself, "Authorization: Bearer <secret>", from the service's
// headers (see examples/argocd/notifications.yaml).
func NewHandler(opts Options) http.Handler {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	mux := http.NewServeMux()
	for _, p := range providers() {
		mux.Handle("/hooks/"+p.name, &receiver{provider: p, opts: opts, log: opts.Logger.WithValues("provider", p.name)})
	}
	return mux
}

// provider is one sender's check and parser. Both are pure.
type provider struct {
	name string
	// verify reports whether the request carries proof of the secret.
	verify func(h http.Header, body, secret []byte) bool
	// parse turns a verified body into an event.
	parse func(h http.Header, body []byte) (parsed, error)
}

func providers() []provider {
	return []provider{
		{name: ProviderGitHub, verify: verifyGitHub, parse: parseGitHub},
		{name: ProviderGitLab, verify: verifyGitLab, parse: parseGitLab},
		{name: ProviderGitea, verify: verifyGitea, parse: parseGitea},
		{name: ProviderRegistry, verify: verifyBearer, parse: parseRegistry},
		{name: ProviderFlux, verify: verifyFlux, parse: parseFlux},
		{name: ProviderArgoCD, verify: verifyBearer, parse: parseArgoCD},
	}
}

// verdict says what a parsed request amounts to.
type verdict int

const (
	deliver verdict = iota // hand Event to OnEvent
	ignore                 // verified, but nothing we act on
	pong                   // GitHub's ping after a webhook is created
)

type parsed struct {
	verdict verdict
	event   Event
	reason  string // why it was ignored, for the log
}

// errUnsupportedMediaType marks a parse failure that is about the envelope's
// media type rather than its content.
var errUnsupportedMediaType = errors.New("unsupported media type")

type receiver struct {
	provider provider
	opts     Options
	log      logr.Logger
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		rc.refuse(w, http.StatusMethodNotAllowed, ResultMethodNotAllowed, fmt.Sprintf("method %s not allowed, webhooks are POSTed", r.Method))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, rc.opts.MaxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			rc.refuse(w, http.StatusRequestEntityTooLarge, ResultTooLarge, fmt.Sprintf("body larger than %d bytes", rc.opts.MaxBodyBytes))
			return
		}
		rc.refuse(w, http.StatusBadRequest, ResultBadRequest, fmt.Sprintf("reading body: %v", err))
		return
	}
	if len(rc.opts.Secret) == 0 {
		rc.log.Error(nil, "webhook secret is not configured; refusing every request until it is set")
		rc.refuse(w, http.StatusUnauthorized, ResultUnauthorized, "unauthorized")
		return
	}
	if !rc.provider.verify(r.Header, body, rc.opts.Secret) {
		// Say nothing about which check failed to an unauthenticated caller.
		rc.refuse(w, http.StatusUnauthorized, ResultUnauthorized, "unauthorized")
		return
	}
	p, err := rc.provider.parse(r.Header, body)
	switch {
	case errors.Is(err, errUnsupportedMediaType):
		rc.refuse(w, http.StatusUnsupportedMediaType, ResultUnsupportedMediaType, err.Error())
		return
	case err != nil:
		rc.refuse(w, http.StatusBadRequest, ResultBadRequest, err.Error())
		return
	}
	switch p.verdict {
	case pong:
		rc.answer(w, http.StatusOK, ResultPing, "pong")
	case ignore:
		rc.log.V(1).Info("ignoring webhook", "reason", p.reason)
		rc.answer(w, http.StatusAccepted, ResultIgnored, "ignored: "+p.reason)
	default:
		if rc.opts.OnEvent != nil {
			rc.opts.OnEvent(p.event)
		}
		rc.log.V(1).Info("accepted webhook", "kind", p.event.Kind, "repositories", p.event.Repositories, "images", p.event.Images, "deployment", p.event.Deployment)
		rc.answer(w, http.StatusAccepted, ResultAccepted, "accepted")
	}
}

func (rc *receiver) refuse(w http.ResponseWriter, status int, result, msg string) {
	rc.log.Info("refusing webhook", "status", status, "reason", msg)
	rc.answer(w, status, result, msg)
}

func (rc *receiver) answer(w http.ResponseWriter, status int, result, msg string) {
	if rc.opts.Metrics != nil {
		rc.opts.Metrics(rc.provider.name, result)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, msg+"\n")
}
