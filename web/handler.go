package web

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-logr/logr"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/controller"
	"github.com/vectorflow-dev/vectorflow/reconcilers/pass"
	"github.com/vectorflow-dev/vectorflow/source"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Repository is what the view reads of one config repository; Reader is
// the one that reads git.
type Repository interface {
	Snapshot() *Snapshot
	Audit(ctx context.Context, stage string) ([]controller.AuditEntry, error)
	Describe(ctx context.Context, promotion string) (pass.PullRequestDescription, error)
}

// Options configure the view.
type Options struct {
	Repositories []Repository
	// Auth guards every route; nil leaves the view open.
	Auth *Auth
	// LoopbackHostsOnly refuses requests whose Host is not a loopback
	// name or address. An open view on 127.0.0.1 is otherwise readable by
	// any web site the user visits, through DNS rebinding: the site's name
	// resolves to 127.0.0.1 and the browser calls the view same-origin.
	LoopbackHostsOnly bool
	Events            *Broker
	Now               func() time.Time
	Log               logr.Logger
}

// Limits on what a request may ask.
const (
	// MaxQuery is the longest query string a page accepts (414 beyond):
	// a filter is a few names, and a long one is a mistake or an attack.
	MaxQuery = 1024
	// MaxPath is the longest path (414 beyond).
	MaxPath = 1024
)

// contentSecurityPolicy allows the view's own script, style and event
// stream and nothing else: no inline script, no framing, no form posting
// elsewhere.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// NewHandler serves the view:
//
//	GET /                                      every repository's pipeline
//	GET /r/{repo}/                             one repository's pipeline
//	GET /r/{repo}/promotions?config=&stage=&state=   promotions, filtered
//	GET /r/{repo}/promotions/{name}            one promotion
//	GET /r/{repo}/stages/{landscape}/{name}    one stage and its history
//	GET /r/{repo}/vectors                      vectors and where they run
//	GET /events                                server-sent events on change
//	GET /static/...                            the stylesheet and script
//
// It answers 404 for a name that does not exist, 400 for a query parameter
// it does not know or a filter naming what does not exist, 414 for a query
// or path over MaxQuery or MaxPath, 405 for anything but GET and HEAD, 401
// without credentials when Auth is set, and 503 beyond the event stream's
// clients.
func NewHandler(o Options) (http.Handler, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Events == nil {
		o.Events = NewBroker(64, 15*time.Second)
	}
	pages, err := parseTemplates()
	if err != nil {
		return nil, err
	}
	s := &server{o: o, pages: pages, repos: map[string]Repository{}}
	for _, r := range o.Repositories {
		s.repos[r.Snapshot().ID] = r
		s.order = append(s.order, r.Snapshot().ID)
	}
	static, _ := fs.Sub(staticFS, "static")
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.index)
	mux.HandleFunc("GET /r/{repo}/{$}", s.pipeline)
	mux.HandleFunc("GET /r/{repo}/promotions", s.promotions)
	mux.HandleFunc("GET /r/{repo}/promotions/{name}", s.promotion)
	mux.HandleFunc("GET /r/{repo}/stages/{landscape}/{name}", s.stage)
	mux.HandleFunc("GET /r/{repo}/vectors", s.vectors)
	mux.Handle("GET /events", o.Events)
	files := http.StripPrefix("/static/", http.FileServer(http.FS(static)))
	mux.HandleFunc("GET /static/{file}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("file") == "" {
			s.fail(w, r, http.StatusNotFound, "no page at "+r.URL.Path)
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			s.fail(w, r, http.StatusMethodNotAllowed, "the web view is read-only: approve with `vectorflow approve`")
			return
		}
		s.fail(w, r, http.StatusNotFound, "no page at "+r.URL.Path)
	})
	var h http.Handler = s.guard(mux)
	if o.Auth != nil {
		h = o.Auth.Wrap(h)
	}
	return securityHeaders(h), nil
}

type server struct {
	o     Options
	pages map[string]*template.Template
	repos map[string]Repository
	order []string
}

// securityHeaders are on every answer, errors and 401 included.
func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", contentSecurityPolicy)
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.ServeHTTP(w, r)
	})
}

// guard refuses oversized requests before any routing.
func (s *server) guard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.o.LoopbackHostsOnly && !loopbackHost(r.Host) {
			s.fail(w, r, http.StatusMisdirectedRequest, fmt.Sprintf("this view answers to localhost only, not to %q: open it as http://localhost or http://127.0.0.1, or serve it with --ui-token-file or --ui-basic-auth-file", r.Host))
			return
		}
		if len(r.URL.RawQuery) > MaxQuery || len(r.URL.EscapedPath()) > MaxPath {
			s.fail(w, r, http.StatusRequestURITooLong, fmt.Sprintf("the address is too long: at most %d characters of path and %d of query", MaxPath, MaxQuery))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// query checks that r's query holds only the allowed parameters, each at
// most once, and returns them.
func query(r *http.Request, allowed ...string) (url.Values, string) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, "the query does not parse: " + err.Error()
	}
	for k, v := range q {
		known := false
		for _, a := range allowed {
			known = known || k == a
		}
		switch {
		case !known && len(allowed) == 0:
			return nil, fmt.Sprintf("unknown query parameter %q: this page takes none", k)
		case !known:
			return nil, fmt.Sprintf("unknown query parameter %q: use %s", k, strings.Join(allowed, ", "))
		case len(v) > 1:
			return nil, fmt.Sprintf("query parameter %q is given %d times; give it once", k, len(v))
		}
	}
	return q, ""
}

func (s *server) repo(w http.ResponseWriter, r *http.Request) (Repository, *Snapshot, bool) {
	repo := s.repos[r.PathValue("repo")]
	if repo == nil {
		s.fail(w, r, http.StatusNotFound, fmt.Sprintf("no repository %q in this view", r.PathValue("repo")))
		return nil, nil, false
	}
	return repo, repo.Snapshot(), true
}

func (s *server) index(w http.ResponseWriter, r *http.Request) {
	if _, problem := query(r); problem != "" {
		s.fail(w, r, http.StatusBadRequest, problem)
		return
	}
	now := s.o.Now()
	var pipes []Pipeline
	for _, id := range s.order {
		pipes = append(pipes, BuildPipeline(s.repos[id].Snapshot(), now))
	}
	s.render(w, r, "pipeline", "Pipelines", "", pipes)
}

func (s *server) pipeline(w http.ResponseWriter, r *http.Request) {
	_, snap, ok := s.repo(w, r)
	if !ok {
		return
	}
	if _, problem := query(r); problem != "" {
		s.fail(w, r, http.StatusBadRequest, problem)
		return
	}
	s.render(w, r, "pipeline", "Pipeline", snap.ID, []Pipeline{BuildPipeline(snap, s.o.Now())})
}

func (s *server) promotions(w http.ResponseWriter, r *http.Request) {
	_, snap, ok := s.repo(w, r)
	if !ok {
		return
	}
	q, problem := query(r, "config", "stage", "state")
	if problem != "" {
		s.fail(w, r, http.StatusBadRequest, problem)
		return
	}
	f := Filter{Config: q.Get("config"), Stage: q.Get("stage"), State: q.Get("state")}
	if problem := ValidateFilter(snap, f); problem != "" {
		s.fail(w, r, http.StatusBadRequest, problem)
		return
	}
	s.render(w, r, "promotions", "Promotions", snap.ID, BuildPromotionList(snap, f))
}

func (s *server) promotion(w http.ResponseWriter, r *http.Request) {
	repo, snap, ok := s.repo(w, r)
	if !ok {
		return
	}
	if _, problem := query(r); problem != "" {
		s.fail(w, r, http.StatusBadRequest, problem)
		return
	}
	name := r.PathValue("name")
	pg, ok := BuildPromotionPage(snap, name, func() (pass.PullRequestDescription, error) {
		return repo.Describe(r.Context(), name)
	})
	if !ok {
		s.fail(w, r, http.StatusNotFound, fmt.Sprintf("no promotion %q on %s of %s", name, snap.StateBranch, snap.URL))
		return
	}
	s.render(w, r, "promotion", name, snap.ID, pg)
}

func (s *server) stage(w http.ResponseWriter, r *http.Request) {
	repo, snap, ok := s.repo(w, r)
	if !ok {
		return
	}
	if _, problem := query(r); problem != "" {
		s.fail(w, r, http.StatusBadRequest, problem)
		return
	}
	key := source.StageKey(r.PathValue("landscape"), r.PathValue("name"))
	pg, ok := BuildStagePage(snap, key, s.o.Now(), func() ([]controller.AuditEntry, error) { return repo.Audit(r.Context(), key) })
	if !ok {
		s.fail(w, r, http.StatusNotFound, fmt.Sprintf("no Stage %s in Landscape %s of %s", r.PathValue("name"), r.PathValue("landscape"), snap.URL))
		return
	}
	s.render(w, r, "stage", key, snap.ID, pg)
}

func (s *server) vectors(w http.ResponseWriter, r *http.Request) {
	_, snap, ok := s.repo(w, r)
	if !ok {
		return
	}
	if _, problem := query(r); problem != "" {
		s.fail(w, r, http.StatusBadRequest, problem)
		return
	}
	s.render(w, r, "vectors", "Vectors", snap.ID, BuildVectorsPage(snap))
}

// view is what the layout gets: the page's own data in Data.
type view struct {
	Title, RepoID string
	Repos         []string
	Data          any
	Status        int
}

func (s *server) render(w http.ResponseWriter, r *http.Request, page, title, repoID string, data any) {
	s.write(w, r, http.StatusOK, page, view{Title: title, RepoID: repoID, Repos: s.order, Data: data})
}

func (s *server) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	s.write(w, r, status, "error", view{Title: http.StatusText(status), Repos: s.order, Data: msg, Status: status})
}

func (s *server) write(w http.ResponseWriter, r *http.Request, status int, page string, v view) {
	var buf bytes.Buffer
	if err := s.pages[page].ExecuteTemplate(&buf, "layout", v); err != nil {
		s.o.Log.Error(err, "web view: render failed", "page", page, "path", r.URL.Path)
		http.Error(w, "the page could not be rendered; see the log", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(buf.Bytes())
	}
}

// parseTemplates parses the layout with each page.
func parseTemplates() (map[string]*template.Template, error) {
	funcs := template.FuncMap{
		"short":       short,
		"shortDigest": v1alpha1.ShortDigest,
		"join":        strings.Join,
		"path":        url.PathEscape,
		"stageURL":    stageURL,
		"lower":       strings.ToLower,
		"promotionURL": func(repo, name string) string {
			return "/r/" + url.PathEscape(repo) + "/promotions/" + url.PathEscape(name)
		},
	}
	out := map[string]*template.Template{}
	for _, page := range []string{"pipeline", "promotions", "promotion", "stage", "vectors", "error"} {
		t, err := template.New(page).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+page+".html")
		if err != nil {
			return nil, fmt.Errorf("web view: parse template %s: %w", page, err)
		}
		out[page] = t
	}
	return out, nil
}

// loopbackHost reports whether the Host header names this machine by a
// loopback name or address.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
