//go:build !jinid_omit_tools

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/discovery/group"
	"github.com/jinid/jinid/discovery/manager"
	"github.com/jinid/jinid/internal/lifecycle"
)

// watchOptions are what `jinid discover --watch` runs with.
type watchOptions struct {
	groups               []string // nil: all
	locators             []discovery.Locator
	announcementInterval time.Duration
	noMulticast          bool
	include, exclude     []string
	excludeDefaultRoute  bool
	ttl                  int
	json                 bool
	log                  *slog.Logger
	// started, if set, is handed the discovery manager once it runs
	// (browse --watch asks it where a lookup service is now).
	started func(*manager.Manager)
	// announced, if set, hears every announcement (browse --watch learns
	// where a lookup service announces from now).
	announced func(discovery.Announcement)
}

// watch runs the discovery manager until ctx ends, printing each event.
func watch(ctx context.Context, w io.Writer, o watchOptions) error {
	p := &eventPrinter{w: w, json: o.json}
	return runDiscovery(ctx, o, p.print)
}

func runManager(ctx context.Context, cfg manager.Config, mc *group.Multicast, o watchOptions) error {
	m, err := manager.New(cfg)
	if err != nil {
		return err
	}
	// Started in order, shut down in reverse: nothing heard after the
	// manager stops.
	var parts lifecycle.Group
	if mc != nil {
		if o.announced != nil {
			mc.SetSink(hearing{m, o.announced})
		} else {
			mc.SetSink(m)
		}
		parts.Add("the multicast network", mc)
	}
	parts.Add("discovery", m)
	if err := parts.Start(ctx); err != nil {
		return err
	}
	if o.started != nil {
		o.started(m)
	}
	<-ctx.Done()
	return parts.Shutdown(context.Background())
}

// hearing hands every announcement to a listener before the manager.
type hearing struct {
	*manager.Manager
	announced func(discovery.Announcement)
}

func (h hearing) HandleAnnouncement(a discovery.Announcement, iface string) {
	h.announced(a)
	h.Manager.HandleAnnouncement(a, iface)
}

// watchEvent is one event as --watch --json prints it.
type watchEvent struct {
	Time time.Time `json:"time"`
	// Event is discovered, changed, discarded, or gone: a lookup
	// service that announced no groups any more, which is what one does
	// as it shuts down.
	Event     string `json:"event"`
	Reason    string `json:"reason,omitempty"`
	ServiceID string `json:"serviceID"`
	// StandIn: the ServiceID stands in for that of a lookup service
	// whose proxy jinid cannot read (not Reggie's, not jinid's), which
	// only its announcements tell; it is then discarded under this one
	// (reason "identified") and discovered under the real one.
	StandIn   bool     `json:"serviceIDStandIn,omitempty"`
	Host      string   `json:"host"`
	Port      int      `json:"port"`
	Groups    []string `json:"groups"`
	Interface string   `json:"interface,omitempty"`
	ByGroup   bool     `json:"byGroup"`
	ByLocator bool     `json:"byLocator"`
	Locator   string   `json:"locator,omitempty"`
	Version   int      `json:"protocolVersion,omitempty"`
	Kind      string   `json:"kind"`
	APIURL    string   `json:"apiURL,omitempty"`
	ProxySize int      `json:"proxySize,omitempty"`
}

type eventPrinter struct {
	mu   sync.Mutex
	w    io.Writer
	json bool
}

func (p *eventPrinter) print(e manager.Event) {
	we := watchEvent{Time: e.At.UTC(), Event: e.Kind.String(), Reason: e.Reason, ServiceID: e.ID.String(), StandIn: e.IDIsStandIn(),
		Host: e.Host, Port: e.Port, Groups: e.Groups, Interface: e.Interface, ByGroup: e.ByGroup, ByLocator: e.ByLocator,
		Version: e.Version, Kind: "java", ProxySize: len(e.Registrar.Marshalled)}
	if gone(e) {
		we.Event = "gone"
	}
	if e.Locator != nil {
		we.Locator = e.Locator.String()
	}
	if d := e.Registrar.Descriptor; d != nil {
		we.Kind, we.APIURL, we.ProxySize = "jinid", d.APIURL, 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.json {
		b, _ := json.Marshal(we) // plain data: cannot fail
		p.w.Write(append(b, '\n'))
		return
	}
	var by []string
	if we.ByGroup {
		by = append(by, "group")
	}
	if we.ByLocator {
		by = append(by, "locator")
	}
	line := fmt.Sprintf("%s  %-10s  %s  %s  groups=%s", we.Time.Format(time.RFC3339Nano), we.Event, we.ServiceID,
		discovery.HostPort(we.Host, we.Port), discovery.GroupsText(we.Groups, ","))
	if we.Interface != "" {
		line += "  interface=" + we.Interface
	}
	if len(by) > 0 {
		line += "  by=" + strings.Join(by, ",")
	}
	if we.Reason != "" {
		line += "  reason=" + we.Reason
	}
	if we.StandIn {
		line += "  stand-in"
	}
	if we.Kind == "jinid" {
		line += "  jinid " + we.APIURL
	} else {
		line += fmt.Sprintf("  java (proxy %d bytes)", we.ProxySize)
	}
	fmt.Fprintln(p.w, line)
}

// gone tells the event of a lookup service that announced it is a member
// of no group any more: a jinid or Java lookup service does that as it
// shuts down. (To the discovery engine it is a change of groups, or, if
// groups were of interest, a discard for no interest.)
func gone(e manager.Event) bool {
	return len(e.Groups) == 0 && (e.Kind == discovery.Changed || e.Kind == discovery.Discarded && e.Reason == discovery.ReasonNoInterest)
}
