package mailbox

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jinid/jinid/services/access"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/event"
	"github.com/jinid/jinid/services/fault"
	"github.com/jinid/jinid/services/httpjson"
	"github.com/jinid/jinid/services/lease"
)

// MaxPollWait caps a long-polling next: the server's write timeout is
// 30 s. Waiting less than asked and answering "nothing" is within the
// specification's "up to timeout".
const MaxPollWait = 25 * time.Second

// Name, Prefix and Routes make the service a part of the API (API.md,
// "Event mailbox").
func (s *Service) Name() string   { return "event mailbox" }
func (s *Service) Prefix() string { return "/v1/mailbox/" }

// Place and Holds spread the registrations among a cluster's shards
// (httpjson.Placer): a request goes with the registration it names, a
// new one with its owner's, and an event for a listener of the shards'
// mailboxes (their ListenerTag, ShardTag here) with the shard the rest of
// the listener's ID says; an event for any other listener is this
// service's to take or refuse.
func (s *Service) Place(r *http.Request) httpjson.Place {
	if l := r.PathValue("listener"); l != "" {
		if rest, ok := strings.CutPrefix(l, s.cfg.ShardTag); ok && s.cfg.ShardTag != "" && rest != "" && !s.IsOwnListener(&url.URL{Path: ListenerPath + l}) {
			return httpjson.Place{Key: rest}
		}
		return httpjson.Place{}
	}
	return httpjson.ByKey(r.PathValue("id"))
}

func (s *Service) Holds(id string) bool { _, err := s.Get(id); return err == nil }

// Routes registers the service's endpoints, its mailbox listeners among
// them.
func (s *Service) Routes(mux httpjson.Mux) {
	mux.Handle(httpjson.Client, "POST /v1/mailbox/registrations", s.httpRegister)
	mux.Handle(httpjson.Read, "GET /v1/mailbox/registrations/{id}", s.httpGet)
	// A registration (its events above all) is the client's that made
	// it (or an administrator's) only.
	owned := func(h http.HandlerFunc) http.HandlerFunc {
		return s.cfg.Grantor.Owned("mailbox registration", s.leaseOf, h)
	}
	mux.Handle(httpjson.Client, "PUT /v1/mailbox/registrations/{id}/delivery", owned(s.httpEnable))
	mux.Handle(httpjson.Client, "DELETE /v1/mailbox/registrations/{id}/delivery", owned(s.httpDisable))
	mux.Handle(httpjson.Client, "POST /v1/mailbox/registrations/{id}/iterators", owned(s.httpIterator))
	mux.Handle(httpjson.Client, "GET /v1/mailbox/registrations/{id}/iterators/{it}/next", owned(s.httpNext))
	mux.Handle(httpjson.Client, "DELETE /v1/mailbox/registrations/{id}/iterators/{it}", owned(s.httpCloseIterator))
	mux.Handle(httpjson.Client, "POST /v1/mailbox/registrations/{id}/unknown-events", owned(s.httpUnknown))
	mux.Handle(httpjson.Capability, "POST "+ListenerPath+"{listener}", s.httpNotify)
}

func (s *Service) leases() httpjson.Leases { return httpjson.Leases{Now: s.clock.Now} }

// listenerURL is the URL of the mailbox listener named listener.
func listenerURL(r *http.Request, listener string) apitypes.Listener {
	return apitypes.Listener{URL: httpjson.BaseOf(r).URL + ListenerPath + listener}
}

func (s *Service) httpRegister(w http.ResponseWriter, r *http.Request) {
	var req struct {
		LeaseDuration *int64 `json:"leaseDuration"`
		Pull          bool   `json:"pull"`
	}
	if err := httpjson.Decode(w, r, &req); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	if err := httpjson.Required("leaseDuration", req.LeaseDuration); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	reg, err := s.Register(*req.LeaseDuration, req.Pull, access.PrincipalOf(r.Context()).Owner())
	if err != nil {
		httpjson.WriteError(w, err)
		return
	}
	httpjson.Write(w, http.StatusOK, apitypes.MailboxRegistration{ID: reg.ID, Lease: lease.Shown(s.leases().Of(r, reg.Lease.ID, reg.Lease.Expiration), reg.Lease),
		Listener: listenerURL(r, reg.Listener)})
}

func (s *Service) httpGet(w http.ResponseWriter, r *http.Request) {
	info, err := s.Get(r.PathValue("id"))
	if err != nil {
		httpjson.WriteError(w, err)
		return
	}
	rec, err := s.cfg.Grantor.Get(info.Lease)
	if err != nil {
		httpjson.WriteError(w, noSuch(info.ID))
		return
	}
	var target any
	if info.Target != "" {
		target = apitypes.Listener{URL: info.Target}
	}
	unknown := make([]apitypes.EventKind, len(info.Unknown))
	for i, k := range info.Unknown {
		unknown[i] = apitypes.EventKind(k)
	}
	var listener any = listenerURL(r, info.Listener)
	shown := s.cfg.Grantor.Shown(r, rec.ID)
	if shown == "" {
		// The listener URL is the power to put events in the mailbox,
		// the lease's ID to cancel it: the owner's alone.
		listener = nil
	}
	httpjson.Write(w, http.StatusOK, map[string]any{"id": info.ID, "lease": s.leases().Of(r, shown, rec.Expiration),
		"listener": listener, "pull": info.Pull, "target": target, "iterator": info.Iterator,
		"pending": info.Pending, "unknownEvents": unknown})
}

func (s *Service) httpEnable(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Target *apitypes.Listener `json:"target"`
	}
	if err := httpjson.DecodeRequired(w, r, &req, "target"); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	target := ""
	if req.Target != nil {
		if req.Target.URL == "" {
			httpjson.WriteError(w, fault.New(apitypes.NullArgument, "target.url is required (a null target disables delivery)"))
			return
		}
		target = req.Target.URL
	}
	if err := s.EnableDelivery(r.Context(), r.PathValue("id"), target); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Service) httpDisable(w http.ResponseWriter, r *http.Request) {
	if err := s.EnableDelivery(r.Context(), r.PathValue("id"), ""); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Service) httpIterator(w http.ResponseWriter, r *http.Request) {
	it, err := s.Iterator(r.PathValue("id"))
	if err != nil {
		httpjson.WriteError(w, err)
		return
	}
	httpjson.Write(w, http.StatusOK, map[string]string{"iterator": it})
}

// httpNext long-polls: ?timeout=ms (default 0: do not wait).
func (s *Service) httpNext(w http.ResponseWriter, r *http.Request) {
	var timeout time.Duration
	if v := r.URL.Query().Get("timeout"); v != "" {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			httpjson.WriteError(w, fault.New(apitypes.InvalidArgument, "timeout %q: want milliseconds", v))
			return
		}
		if ms < 0 {
			httpjson.WriteError(w, fault.New(apitypes.InvalidArgument, "timeout %d is negative", ms))
			return
		}
		timeout = min(time.Duration(ms)*time.Millisecond, MaxPollWait)
	}
	ctx, cancel, stopped := httpjson.UntilStopping(r.Context())
	defer cancel()
	ev, err := s.Next(ctx, r.PathValue("id"), r.PathValue("it"), timeout)
	if err != nil && stopped() {
		err = httpjson.ErrStopping()
	}
	if err != nil {
		httpjson.WriteError(w, err)
		return
	}
	if ev == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(append(ev, '\n'))
}

func (s *Service) httpCloseIterator(w http.ResponseWriter, r *http.Request) {
	if err := s.CloseIterator(r.PathValue("id"), r.PathValue("it")); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Service) httpUnknown(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Events *[]apitypes.EventKind `json:"events"`
	}
	if err := httpjson.Decode(w, r, &req); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	if req.Events == nil {
		httpjson.WriteError(w, fault.New(apitypes.NullArgument, "events is required"))
		return
	}
	keys := make([]Key, len(*req.Events))
	for i, k := range *req.Events {
		keys[i] = Key(k)
	}
	if err := s.AddUnknownEvents(r.PathValue("id"), keys); err != nil {
		httpjson.WriteError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// httpNotify is a mailbox listener: events from any generator.
func (s *Service) httpNotify(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxEventSize+1))
	if err != nil {
		httpjson.WriteError(w, fault.New(apitypes.InvalidArgument, "event larger than %d bytes", MaxEventSize))
		return
	}
	hops := 0
	if h := r.Header.Get(event.HopsHeader); h != "" {
		if hops, err = strconv.Atoi(h); err != nil {
			httpjson.WriteError(w, fault.New(apitypes.InvalidArgument, "%s %q: want a number", event.HopsHeader, h))
			return
		}
	}
	if err := s.Notify(r.PathValue("listener"), body, hops); err != nil {
		var full *Full
		if errors.As(err, &full) {
			// Indefinite: the generator retries later.
			httpjson.WriteError(w, fault.Limit(apitypes.Unavailable, full.Limit, 1, "the mailbox takes no more events now (%s); try again later", full.Why))
			return
		}
		httpjson.WriteError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// leaseOf is the lease ID of registration id ("" for one that is gone).
func (s *Service) leaseOf(id string) string {
	info, _ := s.Get(id)
	return info.Lease
}
