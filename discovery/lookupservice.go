package discovery

import (
	"bytes"
	"fmt"
	"iter"
	"net/netip"
	"slices"
	"strings"
	"time"
)

// LookupService is a lookup service as the discovery engines know it:
// what its unicast discovery answered, and its ServiceID.
type LookupService struct {
	ID ServiceID
	// IDFromProxy says ID stands in for one jinid could not read: a Java
	// lookup service found by request or locator keeps its ServiceID
	// inside the proxy, which jinid does not unmarshal, so until an
	// announcement tells the real one the ID is a hash of the proxy (the
	// same proxy always gives the same ID).
	IDFromProxy bool
	Host        string
	Port        int
	Groups      []string
	// Version of the protocol its unicast discovery spoke.
	Version int
	// Interface it was heard on, for group discovery.
	Interface string
	Registrar Registrar
}

// Address is host:port.
func (ls LookupService) Address() string { return Locator{Host: ls.Host, Port: ls.Port}.Address() }

// Same reports whether two descriptions are of one lookup service. With
// both ServiceIDs known, that is the same ServiceID. A Java lookup
// service hides its ServiceID in its proxy (jinid stands a hash of the
// proxy in for it until an announcement tells it), and it answers in
// both protocol versions with proxies that differ byte for byte (a
// MarshalledObject in version 1, a MarshalledInstance in version 2). So
// when either ServiceID is a stand-in, two descriptions of Java lookup
// services are one when their proxies are equal, or when both give their
// port and host and port are the same.
func (ls LookupService) Same(o LookupService) bool {
	if ls.ID == o.ID {
		return true
	}
	if !ls.IDFromProxy && !o.IDFromProxy || ls.Registrar.Descriptor != nil || o.Registrar.Descriptor != nil {
		return false
	}
	if len(ls.Registrar.Marshalled) > 0 && bytes.Equal(ls.Registrar.Marshalled, o.Registrar.Marshalled) {
		return true
	}
	return ls.Port != 0 && ls.Port == o.Port && SameHost(ls.Host, o.Host)
}

// Likely reports whether two descriptions not known to be of one lookup
// service may be: Java lookup services, one with a stand-in ServiceID, at
// one host, one of them not telling its port (a version 1 answer), with
// the same groups. (If a host runs several Java lookup services with the
// same groups, a version 1 answer may be taken for the wrong one; it then
// tells nothing new.)
func (ls LookupService) Likely(o LookupService) bool {
	if !ls.IDFromProxy && !o.IDFromProxy || ls.Registrar.Descriptor != nil || o.Registrar.Descriptor != nil {
		return false
	}
	return (ls.Port == 0 || o.Port == 0) && SameHost(ls.Host, o.Host) && SameGroups(ls.Groups, o.Groups)
}

// Lookup finds the lookup service ls describes among known (described by
// describe): the first that is the Same, else the only one that is
// Likely the same.
func Lookup[T any](known iter.Seq[T], describe func(T) LookupService, ls LookupService) (T, bool) {
	var likely []T
	for k := range known {
		d := describe(k)
		if d.Same(ls) {
			return k, true
		}
		if d.Likely(ls) {
			likely = append(likely, k)
		}
	}
	if len(likely) == 1 {
		return likely[0], true
	}
	var zero T
	return zero, false
}

// SameHost reports whether two host strings name one host as written:
// equal IP addresses (an IPv4-mapped IPv6 address equals its IPv4 one;
// zones compared only when both have one), or names equal but for case.
func SameHost(a, b string) bool {
	x, errA := netip.ParseAddr(a)
	y, errB := netip.ParseAddr(b)
	if errA != nil || errB != nil {
		return errA != nil && errB != nil && strings.EqualFold(a, b)
	}
	if x.Zone() == "" || y.Zone() == "" {
		x, y = x.WithZone(""), y.WithZone("")
	}
	return x.Unmap() == y.Unmap()
}

// Clone returns a copy that shares nothing mutable with ls.
func (ls LookupService) Clone() LookupService {
	ls.Groups = slices.Clone(ls.Groups)
	return ls
}

// EventKind says what happened to a lookup service.
type EventKind int

// The kinds of discovery event, as in the Java discovery utilities.
const (
	// Discovered: found for the first time, or again after a discard.
	Discovered EventKind = iota + 1
	// Discarded: no longer in the discovered set (see Event.Reason).
	Discarded
	// Changed: its member groups changed and it is still of interest.
	Changed
	// Identified: a Java lookup service known under a stand-in ServiceID
	// (see LookupService.IDFromProxy) announced its real one; Event.StandIn
	// is the ID it was known by. Nothing else changed.
	Identified
)

func (k EventKind) String() string {
	switch k {
	case Discovered:
		return "discovered"
	case Discarded:
		return "discarded"
	case Changed:
		return "changed"
	case Identified:
		return "identified"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// MarshalText implements encoding.TextMarshaler.
func (k EventKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (k *EventKind) UnmarshalText(b []byte) error {
	for _, c := range []EventKind{Discovered, Discarded, Changed, Identified} {
		if string(b) == c.String() {
			*k = c
			return nil
		}
	}
	return fmt.Errorf("event kind %q: want discovered, discarded, changed or identified", b)
}

// Why a lookup service was discarded.
const (
	// ReasonCommunication: its announcements stopped and it did not
	// answer unicast discovery (a passive communication discard).
	ReasonCommunication = "communication"
	// ReasonNoInterest: its groups no longer meet the groups of interest,
	// because it changed them or the interest changed (a passive
	// no-interest discard).
	ReasonNoInterest = "no-interest"
	// ReasonRequested: Discard was called.
	ReasonRequested = "requested"
	// ReasonLocatorRemoved: its locator left the set of locators.
	ReasonLocatorRemoved = "locator-removed"
)

// Event is one discovery event. For a discard, Groups are the last known
// ones (or the new ones a no-interest discard was caused by).
type Event struct {
	Kind EventKind
	At   time.Time
	LookupService
	// Reason is set for discards.
	Reason string
	// Locator is set when the lookup service was found by locator.
	Locator *Locator
	// StandIn is set for Identified: the stand-in ServiceID it was known
	// by until now.
	StandIn ServiceID
}
