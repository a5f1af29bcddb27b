package api

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/jinid/jinid/services/fault"
	"github.com/jinid/jinid/services/mailbox"
)

// MaxPollWait caps a long-polling next: the server's write timeout is
// 30 s. Waiting less than asked and answering "nothing" is within the
// specification's "up to timeout".
const MaxPollWait = 25 * time.Second

func (s *server) mailboxRoutes() []route {
	return []route{
		{"POST /v1/mailbox/registrations", s.mailboxRegister},
		{"GET /v1/mailbox/registrations/{id}", s.mailboxGet},
		{"PUT /v1/mailbox/registrations/{id}/delivery", s.mailboxEnable},
		{"DELETE /v1/mailbox/registrations/{id}/delivery", s.mailboxDisable},
		{"POST /v1/mailbox/registrations/{id}/iterators", s.mailboxIterator},
		{"GET /v1/mailbox/registrations/{id}/iterators/{it}/next", s.mailboxNext},
		{"DELETE /v1/mailbox/registrations/{id}/iterators/{it}", s.mailboxCloseIterator},
		{"POST /v1/mailbox/registrations/{id}/unknown-events", s.mailboxUnknown},
		{"POST " + mailbox.ListenerPath + "{listener}", s.mailboxNotify},
	}
}

// listenerURL is the URL of the mailbox listener named listener.
func listenerURL(r *http.Request, listener string) map[string]string {
	return map[string]string{"url": "http://" + r.Host + mailbox.ListenerPath + listener}
}

func (s *server) mailboxRegister(w http.ResponseWriter, r *http.Request) {
	svc := s.cfg.Mailbox
	var req struct {
		LeaseDuration *int64 `json:"leaseDuration"`
		Pull          bool   `json:"pull"`
	}
	if err := decode(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	if err := required("leaseDuration", req.LeaseDuration); err != nil {
		writeError(w, err)
		return
	}
	reg, err := svc.Register(*req.LeaseDuration, req.Pull)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": reg.ID, "lease": s.leaseOf(r, reg.Lease), "listener": listenerURL(r, reg.Listener)})
}

func (s *server) mailboxGet(w http.ResponseWriter, r *http.Request) {
	svc := s.cfg.Mailbox
	info, err := svc.Get(r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	rec, err := s.cfg.Grantor.Get(info.Lease)
	if err != nil {
		writeError(w, fault.New(fault.NoSuchObject, "no mailbox registration %q", info.ID))
		return
	}
	var target any
	if info.Target != "" {
		target = map[string]string{"url": info.Target}
	}
	unknown := info.Unknown
	if unknown == nil {
		unknown = []mailbox.Key{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": info.ID, "lease": s.leaseOf(r, rec), "listener": listenerURL(r, info.Listener),
		"pull": info.Pull, "target": target, "iterator": info.Iterator, "pending": info.Pending, "unknownEvents": unknown})
}

func (s *server) mailboxEnable(w http.ResponseWriter, r *http.Request) {
	svc := s.cfg.Mailbox
	var req struct {
		Target *struct {
			URL string `json:"url"`
		} `json:"target"`
	}
	if err := decodeRequired(w, r, &req, "target"); err != nil {
		writeError(w, err)
		return
	}
	target := ""
	if req.Target != nil {
		if req.Target.URL == "" {
			writeError(w, fault.New(fault.NullArgument, "target.url is required (a null target disables delivery)"))
			return
		}
		target = req.Target.URL
	}
	if err := svc.EnableDelivery(r.PathValue("id"), target); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *server) mailboxDisable(w http.ResponseWriter, r *http.Request) {
	svc := s.cfg.Mailbox
	if err := svc.EnableDelivery(r.PathValue("id"), ""); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *server) mailboxIterator(w http.ResponseWriter, r *http.Request) {
	svc := s.cfg.Mailbox
	it, err := svc.Iterator(r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"iterator": it})
}

// mailboxNext long-polls: ?timeout=ms (default 0: do not wait).
func (s *server) mailboxNext(w http.ResponseWriter, r *http.Request) {
	svc := s.cfg.Mailbox
	var timeout time.Duration
	if v := r.URL.Query().Get("timeout"); v != "" {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			writeError(w, fault.New(fault.InvalidArgument, "timeout %q: want milliseconds", v))
			return
		}
		if ms < 0 {
			writeError(w, fault.New(fault.InvalidArgument, "timeout %d is negative", ms))
			return
		}
		timeout = min(time.Duration(ms)*time.Millisecond, MaxPollWait)
	}
	ev, err := svc.Next(r.Context(), r.PathValue("id"), r.PathValue("it"), timeout)
	if err != nil {
		writeError(w, err)
		return
	}
	if ev == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(append(ev, '\n'))
}

func (s *server) mailboxCloseIterator(w http.ResponseWriter, r *http.Request) {
	svc := s.cfg.Mailbox
	if err := svc.CloseIterator(r.PathValue("id"), r.PathValue("it")); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *server) mailboxUnknown(w http.ResponseWriter, r *http.Request) {
	svc := s.cfg.Mailbox
	var req struct {
		Events *[]mailbox.Key `json:"events"`
	}
	if err := decode(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.Events == nil {
		writeError(w, fault.New(fault.NullArgument, "events is required"))
		return
	}
	if err := svc.AddUnknownEvents(r.PathValue("id"), *req.Events); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// mailboxNotify is a mailbox listener: events from any generator.
func (s *server) mailboxNotify(w http.ResponseWriter, r *http.Request) {
	svc := s.cfg.Mailbox
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, mailbox.MaxEventSize+1))
	if err != nil {
		writeError(w, fault.New(fault.InvalidArgument, "event larger than %d bytes", mailbox.MaxEventSize))
		return
	}
	if err := svc.Notify(r.PathValue("listener"), body); err != nil {
		if errors.Is(err, mailbox.ErrFull) {
			// Indefinite: the generator retries later.
			w.Header().Set("Retry-After", "1")
			writeError(w, fault.New(fault.Internal, "%v", err), http.StatusServiceUnavailable)
			return
		}
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
