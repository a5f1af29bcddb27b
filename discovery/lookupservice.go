package discovery

import (
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
	// ID is its ServiceID, as its registrar proxy carries it (Reggie's
	// and jinid's do; see Registrar.ServiceID) or, for a proxy jinid
	// cannot read, as an announcement told it; until one does, StandIn.
	ID ServiceID
	// StandIn is set when its proxy is of a class jinid cannot read (not
	// Reggie's, not jinid's): a hash of the proxy, the same in every
	// answer (unicast.StandInID). ID is StandIn until an announcement
	// tells the real ServiceID; StandIn stays, so that later answers,
	// which carry only the proxy, are known to be of this lookup service.
	StandIn ServiceID
	Host    string
	Port    int
	Groups  []string
	// Version of the protocol its unicast discovery spoke.
	Version int
	// Interface it was heard on, for group discovery.
	Interface string
	Registrar Registrar
}

// Address is host:port.
func (ls LookupService) Address() string { return Locator{Host: ls.Host, Port: ls.Port}.Address() }

// IDIsStandIn reports whether ID stands in for a ServiceID not known
// yet (see StandIn).
func (ls LookupService) IDIsStandIn() bool { return !ls.StandIn.IsZero() && ls.ID == ls.StandIn }

// Same reports whether two descriptions are of one lookup service: the
// same ServiceID, or the same stand-in (one description may be from
// before its real ServiceID was known, the other from after).
func (ls LookupService) Same(o LookupService) bool {
	return ls.ID == o.ID || !ls.StandIn.IsZero() && ls.StandIn == o.StandIn
}

// Lookup finds the lookup service ls describes among known (described by
// describe): the first that is the Same. Callers look a ServiceID up in
// their index first; a description with a stand-in needs this search.
func Lookup[T any](known iter.Seq[T], describe func(T) LookupService, ls LookupService) (T, bool) {
	for k := range known {
		if describe(k).Same(ls) {
			return k, true
		}
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
	// Updated: where it is reached changed (its best address, the port a
	// version 1 answer did not tell), or the protocol version it is
	// probed in. Nothing a client of discovery is told of: those who
	// keep a description of it refresh it.
	Updated
)

func (k EventKind) String() string {
	switch k {
	case Discovered:
		return "discovered"
	case Discarded:
		return "discarded"
	case Changed:
		return "changed"
	case Updated:
		return "updated"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// MarshalText implements encoding.TextMarshaler.
func (k EventKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (k *EventKind) UnmarshalText(b []byte) error {
	for _, c := range []EventKind{Discovered, Discarded, Changed, Updated} {
		if string(b) == c.String() {
			*k = c
			return nil
		}
	}
	return fmt.Errorf("event kind %q: want discovered, discarded, changed or updated", b)
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
	// ReasonIdentified: it was known under a stand-in ServiceID (its
	// proxy is of a class jinid cannot read) and announced its real one.
	// A discovered event under the real ServiceID follows, so that
	// whoever was told of the stand-in is told it is gone before hearing
	// of the real one: every discard names a ServiceID discovered before.
	ReasonIdentified = "identified"
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
}
