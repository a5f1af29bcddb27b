// Package event delivers remote events to listeners over HTTP (API.md,
// "Remote events"): each listener has its own ordered queue and worker, so
// a slow, failing or dead listener delays only its own events. Indefinite
// failures (5xx, timeouts, refused connections) are retried with capped
// exponential backoff until the lease covering the registration ends;
// definite failures and UnknownEvent are reported to the service that sent
// the event, which applies its own specification's rule.
package event

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jinid/jinid/internal/clock"
	"github.com/jinid/jinid/internal/http1"
	"github.com/jinid/jinid/internal/lifecycle"
	"github.com/jinid/jinid/internal/metrics"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/outbound"
)

// Event is a remote event: one of the event types of apitypes, each a
// typed payload around the common part (apitypes.RemoteEvent, which gives
// it Remote). It is sent as its JSON.
type Event interface {
	Remote() apitypes.RemoteEvent
}

// HopsHeader carries an event's hop count: how many times mailboxes have
// forwarded it (none from its generator: the header is then 0). A jinid
// mailbox refuses an event that has had MaxHops forwards and forwards
// none past that, so mailboxes pushing to each other, on one daemon or
// several, cannot pass an event around for long.
const HopsHeader = "Jinid-Event-Hops"

// MaxHops is the most forwards an event may have had when it arrives.
const MaxHops = 4

// Outcome is how a delivery ended.
type Outcome int

const (
	// Delivered: the listener answered 2xx.
	Delivered Outcome = iota
	// UnknownEvent: the listener answered 410 UnknownEvent.
	UnknownEvent
	// Definite: a failure retrying cannot mend (404, 400, other 4xx).
	Definite
	// GaveUp: the covering lease ended (or the dispatcher closed) while
	// the listener kept failing indefinitely.
	GaveUp
	// Indefinite: one attempt failed in a way a retry may mend (5xx, 408,
	// 429, a timeout, a refused connection); Attempt's outcome only.
	Indefinite
)

func (o Outcome) String() string {
	return [...]string{"delivered", "unknown event", "definite failure", "gave up", "indefinite failure"}[o]
}

// label is the outcome as a metric label.
func (o Outcome) label() string {
	return [...]string{"delivered", "unknown_event", "definite_failure", "gave_up", "indefinite_failure"}[o]
}

// deliveryBuckets: a LAN listener answers in milliseconds; retries
// stretch a delivery to seconds and, while a listener is down, minutes.
var deliveryBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}

// Delivery is one event for one listener.
type Delivery struct {
	Listener string // URL
	Event    Event
	// Until: retry indefinite failures up to this time (the end of the
	// covering lease).
	Until time.Time
	// Deadline, if set, is asked before each retry instead of Until, so a
	// lease renewed meanwhile keeps the delivery going.
	Deadline func() time.Time
	// Done, if set, hears the outcome once, from the listener's worker.
	Done func(Outcome, error)
	// Hops is the event's hop count (HopsHeader): 0 for an event
	// generated here.
	Hops int
	// Native is what a Transport other than HTTP needs beyond Event (for
	// the lookup service, its item with the Java form).
	Native any
	// HostLocal: the listener was named by the host's administrator,
	// who may name this host (outbound.WithHostLocal).
	HostLocal bool
}

// Receiver takes an event inside the daemon (Config.Inside), with
// Attempt's outcomes.
type Receiver func(body []byte, hops int) (Outcome, error)

// Transport delivers events to listeners of a URL scheme other than
// http and https (jeri, to Java listeners), with Attempt's outcomes.
type Transport interface {
	Attempt(ctx context.Context, del Delivery) (Outcome, error)
}

// Config configures a Dispatcher.
type Config struct {
	// Client makes the requests: the daemon's outbound client (nil: one
	// of outbound's defaults).
	Client http1.Doer
	Clock  clock.Clock // default: real
	Logger *slog.Logger
	// Backoff after the first indefinite failure (default 100 ms),
	// doubling up to MaxBackoff (default 30 s).
	Backoff, MaxBackoff time.Duration
	// Metrics, if set, counts deliveries by outcome and their time.
	Metrics *metrics.Registry
	// OnFailure, if set, hears of every delivery that ended undelivered
	// (for the status page's notable events).
	OnFailure func(listener string, out Outcome, err error)
	// Transports deliver to listeners of other schemes, by scheme
	// ("jeri"); a listener of a scheme with none fails definitely.
	Transports map[string]Transport
	// Inside, if set, finds the listeners served inside the daemon (the
	// event mailbox's): their events are handed over in the process,
	// with no request.
	Inside func(listener string) (Receiver, bool)
}

// Dispatcher delivers events.
type Dispatcher struct {
	cfg    Config
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	queues map[string]*queue

	deliveries *metrics.Counter
	duration   *metrics.Histogram
}

type queue struct {
	pending []Delivery
	running bool
}

// New returns a running dispatcher; Close stops it.
func New(cfg Config) *Dispatcher {
	if cfg.Client == nil {
		cfg.Client = outbound.New(outbound.Config{})
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Backoff == 0 {
		cfg.Backoff = 100 * time.Millisecond
	}
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = 30 * time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Dispatcher{cfg: cfg, ctx: ctx, cancel: cancel, queues: map[string]*queue{},
		deliveries: cfg.Metrics.Counter("jinid_event_deliveries_total",
			"Remote events delivered or given up on, by outcome (delivered, unknown_event, definite_failure, gave_up).", "outcome"),
		duration: cfg.Metrics.Histogram("jinid_event_delivery_duration_seconds",
			"Time from an event's first attempt to its outcome, retries included, by outcome.", deliveryBuckets, "outcome"),
	}
}

// Send queues a delivery behind the listener's earlier ones.
func (d *Dispatcher) Send(del Delivery) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ctx.Err() != nil {
		return
	}
	q := d.queues[del.Listener]
	if q == nil {
		q = &queue{}
		d.queues[del.Listener] = q
	}
	q.pending = append(q.pending, del)
	if !q.running {
		q.running = true
		d.wg.Add(1)
		go d.work(del.Listener, q)
	}
}

// AddTransport makes t deliver to listeners of scheme, before the
// dispatcher is given any delivery.
func (d *Dispatcher) AddTransport(scheme string, t Transport) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cfg.Transports == nil {
		d.cfg.Transports = make(map[string]Transport)
	}
	d.cfg.Transports[scheme] = t
}

// SetInside sets Config.Inside, before the dispatcher is given any
// delivery: the event mailbox is made after the dispatcher.
func (d *Dispatcher) SetInside(inside func(listener string) (Receiver, bool)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cfg.Inside = inside
}

// Pending reports how many deliveries are queued, for status and tests.
func (d *Dispatcher) Pending() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, q := range d.queues {
		n += len(q.pending)
	}
	return n
}

// Start implements lifecycle.Service: a listener's worker starts with its
// first event, so there is nothing to start.
func (d *Dispatcher) Start(context.Context) error { return nil }

// Shutdown stops delivering and waits for the workers: a delivery in
// flight is cut short, undelivered events are dropped (their outcome:
// GaveUp).
func (d *Dispatcher) Shutdown(context.Context) error {
	d.cancel()
	d.wg.Wait()
	return nil
}

var _ lifecycle.Service = (*Dispatcher)(nil)

// work delivers a listener's queue in order until it is empty.
func (d *Dispatcher) work(url string, q *queue) {
	defer d.wg.Done()
	for {
		d.mu.Lock()
		if len(q.pending) == 0 || d.ctx.Err() != nil {
			for _, del := range q.pending {
				if del.Done != nil {
					defer del.Done(GaveUp, d.ctx.Err())
				}
			}
			q.pending = nil
			q.running = false
			delete(d.queues, url)
			d.mu.Unlock()
			return
		}
		del := q.pending[0]
		d.mu.Unlock()

		start := d.cfg.Clock.Now()
		out, err := d.deliver(del)
		d.deliveries.Inc(out.label())
		d.duration.Observe(d.cfg.Clock.Now().Sub(start).Seconds(), out.label())
		if out != Delivered && d.cfg.OnFailure != nil {
			d.cfg.OnFailure(del.Listener, out, err)
		}
		d.mu.Lock()
		q.pending = q.pending[1:]
		d.mu.Unlock()
		if out != Delivered {
			ev := del.Event.Remote()
			d.cfg.Logger.Debug("event not delivered", "listener", url, "type", ev.Type, "seq", ev.SeqNum, "outcome", out, "err", err)
		}
		if del.Done != nil {
			del.Done(out, err)
		}
	}
}

// inside finds a listener served inside the daemon.
func (d *Dispatcher) inside(listener string) (Receiver, bool) {
	d.mu.Lock()
	in := d.cfg.Inside
	d.mu.Unlock()
	if in == nil {
		return nil, false
	}
	return in(listener)
}

// deliver posts one event, retrying indefinite failures.
func (d *Dispatcher) deliver(del Delivery) (Outcome, error) {
	body, err := json.Marshal(del.Event)
	if err != nil {
		return Definite, fmt.Errorf("encoding event: %w", err)
	}
	backoff := d.cfg.Backoff
	ctx := d.ctx
	if del.HostLocal {
		ctx = outbound.WithHostLocal(ctx)
	}
	attempt := func() (Outcome, error) { return Attempt(ctx, d.cfg.Client, del.Listener, body, del.Hops) }
	if recv, ok := d.inside(del.Listener); ok {
		attempt = func() (Outcome, error) { return recv(body, del.Hops) }
	} else if scheme, _, ok := strings.Cut(del.Listener, "://"); ok && scheme != "http" && scheme != "https" {
		d.mu.Lock()
		t := d.cfg.Transports[scheme]
		d.mu.Unlock()
		if t == nil {
			return Definite, fmt.Errorf("listener %q: no transport for %s", del.Listener, scheme)
		}
		attempt = func() (Outcome, error) { return t.Attempt(ctx, del) }
	}
	for {
		out, err := attempt()
		if out != Indefinite || d.ctx.Err() != nil {
			if out == Indefinite {
				out = GaveUp
			}
			return out, err
		}
		until := del.Until
		if del.Deadline != nil {
			until = del.Deadline()
		}
		if !d.cfg.Clock.Now().Add(backoff).Before(until) {
			return GaveUp, fmt.Errorf("lease ended while the listener kept failing: %w", err)
		}
		if !d.sleep(backoff) {
			return GaveUp, d.ctx.Err()
		}
		backoff = min(2*backoff, d.cfg.MaxBackoff)
	}
}

func (d *Dispatcher) sleep(t time.Duration) bool {
	done := make(chan struct{})
	timer := d.cfg.Clock.AfterFunc(t, func() { close(done) })
	select {
	case <-done:
		return true
	case <-d.ctx.Done():
		timer.Stop()
		return false
	}
}

// Attempt posts an event (its JSON) to a listener once and classifies the
// answer, as API.md says for every listener: 2xx delivered; 410 with the
// code UnknownEvent is the UnknownEventException; 5xx, 408, 429, a
// timeout or a refused connection indefinite (a retry may mend it);
// anything else, redirects included, definite (a bad object); so is a
// destination the outbound policy refuses. It sends the hop count in
// HopsHeader. The dispatcher and the mailbox's pushes both deliver
// through it.
func Attempt(ctx context.Context, hc http1.Doer, url string, body []byte, hops int) (Outcome, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return Definite, fmt.Errorf("listener URL %q: %w", url, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HopsHeader, strconv.Itoa(hops))
	// An event may be sent again if a kept connection fails under it:
	// its sequence number makes the second one the same event to its
	// listener (remote events are delivered at least once).
	req.Header["Idempotency-Key"] = nil
	resp, err := hc.Do(req)
	switch {
	case errors.Is(err, outbound.ErrForbidden):
		return Definite, err // a name that resolves where jinid sends nothing
	case err != nil:
		return Indefinite, err // refused, timeout, reset
	}
	defer resp.Body.Close()
	reply, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	switch {
	case resp.StatusCode/100 == 2:
		return Delivered, nil
	case resp.StatusCode == http.StatusGone && codeOf(reply) == string(apitypes.UnknownEvent):
		return UnknownEvent, errors.New("listener answered UnknownEvent")
	case resp.StatusCode/100 == 5, resp.StatusCode == http.StatusTooManyRequests, resp.StatusCode == http.StatusRequestTimeout:
		return Indefinite, fmt.Errorf("listener answered %s", resp.Status)
	default:
		return Definite, fmt.Errorf("listener answered %s", resp.Status)
	}
}

func codeOf(reply []byte) string {
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(reply, &e)
	return e.Error.Code
}
