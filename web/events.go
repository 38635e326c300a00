package web

import (
	"fmt"
	"net/http"
	"sync"
	"time"
)

// Broker fans state changes out to the pages open in browsers, over
// server-sent events. It holds at most max clients: each is a connection
// held open for as long as the page is, and a view must not run out of
// file descriptors because many tabs are open.
type Broker struct {
	heartbeat time.Duration
	max       int

	mu      sync.Mutex
	clients map[chan string]struct{}
}

// NewBroker returns a broker for at most max clients that sends a comment
// every heartbeat, so proxies keep the stream open and a dead client is
// noticed.
func NewBroker(max int, heartbeat time.Duration) *Broker {
	return &Broker{max: max, heartbeat: heartbeat, clients: map[chan string]struct{}{}}
}

// Publish tells every client that repository id changed. A client that has
// not read the previous message yet gets no second one: one refresh shows
// both changes.
func (b *Broker) Publish(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for c := range b.clients {
		select {
		case c <- id:
		default:
		}
	}
}

// Clients is how many streams are open.
func (b *Broker) Clients() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.clients)
}

func (b *Broker) subscribe() (chan string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.clients) >= b.max {
		return nil, false
	}
	c := make(chan string, 1)
	b.clients[c] = struct{}{}
	return c, true
}

func (b *Broker) unsubscribe(c chan string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.clients, c)
}

// ServeHTTP streams `event: state` with the repository's id as data on each
// change, and a comment every heartbeat. Beyond max clients it answers 503;
// EventSource retries after the `retry` it was last told.
func (b *Broker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodHead {
		// A HEAD has no body to stream; holding it open would only hold a slot.
		w.Header().Set("Content-Type", "text/event-stream")
		return
	}
	c, ok := b.subscribe()
	if !ok {
		w.Header().Set("Retry-After", "30")
		http.Error(w, "too many live pages are open; this one will not update on its own", http.StatusServiceUnavailable)
		return
	}
	defer b.unsubscribe(c)
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx would buffer the stream
	write := func(format string, args ...any) bool {
		// The server's WriteTimeout would end the stream after 30 s: each
		// write moves the deadline instead. A client that stops reading is
		// dropped after two heartbeats.
		_ = rc.SetWriteDeadline(time.Now().Add(2 * b.heartbeat))
		if _, err := fmt.Fprintf(w, format, args...); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !write("retry: 5000\n: connected\n\n") {
		return
	}
	t := time.NewTicker(b.heartbeat)
	defer t.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case id := <-c:
			if !write("event: state\ndata: %s\n\n", id) {
				return
			}
		case <-t.C:
			if !write(": heartbeat\n\n") {
				return
			}
		}
	}
}
