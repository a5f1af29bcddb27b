// Package apitypes is the wire format of jinid's client API (API.md,
// docs/api/openapi.yaml): the JSON bodies the server writes and reads and
// the remote events it sends, shared by the server and its Go client. It
// is a leaf: it imports nothing of jinid, so a client links none of the
// server. The services keep their own types, and their disk records, apart
// from these: renaming a field here changes the API and nothing else.
package apitypes

import (
	"encoding/json"
	"net/http"
	"strings"
	"unicode"
)

// Code names the Jini specification exception an error stands for.
type Code string

// The codes of API.md.
const (
	InvalidArgument      Code = "InvalidArgument"      // IllegalArgumentException
	NullArgument         Code = "NullArgument"         // NullPointerException
	UnsupportedOperation Code = "UnsupportedOperation" // UnsupportedOperationException
	NoSuchObject         Code = "NoSuchObject"         // NoSuchObjectException
	UnknownLease         Code = "UnknownLease"         // UnknownLeaseException
	LeaseDenied          Code = "LeaseDenied"          // LeaseDeniedException
	UnknownEvent         Code = "UnknownEvent"         // UnknownEventException
	InvalidIterator      Code = "InvalidIterator"      // InvalidIteratorException
	Internal             Code = "Internal"             // anything else

	// Access (API.md, "Access").
	Unauthenticated      Code = "Unauthenticated"      // no valid token where one is needed
	Forbidden            Code = "Forbidden"            // the token's scope is not enough; or a destination jinid sends nothing to
	UnsupportedMediaType Code = "UnsupportedMediaType" // a body that is not application/json
	MisdirectedRequest   Code = "MisdirectedRequest"   // a Host this daemon does not answer to

	// Limits (docs/security.md, "Limits"): the error's limit names the
	// config key.
	TooLarge    Code = "TooLarge"    // a body, an item, a batch larger than a limit
	TooMany     Code = "TooMany"     // a quota reached; retry after some have ended
	Unavailable Code = "Unavailable" // the daemon cannot do it now (its disk); retry after
	// Stopping ends a wait (a long poll) when the daemon begins to
	// stop: try again once it is back.
	Stopping Code = "Stopping"

	// The transaction manager (TX.2.5, TX.2.7; API.md, "Transaction
	// manager").
	UnknownTransaction Code = "UnknownTransaction" // UnknownTransactionException
	CannotJoin         Code = "CannotJoin"         // CannotJoinException
	CannotCommit       Code = "CannotCommit"       // CannotCommitException
	CannotAbort        Code = "CannotAbort"        // CannotAbortException
	CrashCount         Code = "CrashCount"         // CrashCountException
	TimeoutExpired     Code = "TimeoutExpired"     // TimeoutExpiredException (Committed says the outcome)
	OutcomeUnknown     Code = "OutcomeUnknown"     // the outcome cannot be known (indefinite)

	// What became of a request jinid sent on a client's behalf (in
	// renewal failure events and the like): a category, never the
	// remote's answer.
	Refused     Code = "Refused"     // the destination refused the connection
	Unreachable Code = "Unreachable" // no route, or the name does not resolve
	Timeout     Code = "Timeout"     // no answer in time
	BadAnswer   Code = "BadAnswer"   // an answer, not the protocol's
)

// Status is the HTTP status of a code.
func (c Code) Status() int {
	switch c {
	case InvalidArgument, NullArgument:
		return http.StatusBadRequest
	case UnsupportedOperation, LeaseDenied, InvalidIterator:
		return http.StatusConflict
	case NoSuchObject, UnknownLease, UnknownTransaction:
		return http.StatusNotFound
	case CannotJoin, CannotCommit, CannotAbort, CrashCount, TimeoutExpired:
		return http.StatusConflict
	case OutcomeUnknown:
		return http.StatusBadGateway
	case UnknownEvent:
		return http.StatusGone
	case Unauthenticated:
		return http.StatusUnauthorized
	case Forbidden:
		return http.StatusForbidden
	case UnsupportedMediaType:
		return http.StatusUnsupportedMediaType
	case MisdirectedRequest:
		return http.StatusMisdirectedRequest
	case TooLarge:
		return http.StatusRequestEntityTooLarge
	case TooMany:
		return http.StatusTooManyRequests
	case Unavailable, Stopping:
		return http.StatusServiceUnavailable
	case Refused, Unreachable, BadAnswer:
		return http.StatusBadGateway
	case Timeout:
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}

// Error is an error with its code.
type Error struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
	// Limit names the limit (its config key) a TooLarge or TooMany
	// error hit.
	Limit string `json:"limit,omitempty"`
	// RetryAfter, in seconds, says when to try again (also the
	// Retry-After header).
	RetryAfter int `json:"retryAfter,omitempty"`
	// Committed says, for TimeoutExpired, whether the transaction
	// committed (true) or aborted (false).
	Committed *bool `json:"committed,omitempty"`
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// ErrorBody is the body of every error answer.
type ErrorBody struct {
	Error Error `json:"error"`
}

// Forever is the Jini FOREVER duration, in milliseconds; Any (-1) lets
// the grantor choose.
const (
	Forever int64 = 1<<63 - 1
	Any     int64 = -1
)

// --- leases ------------------------------------------------------------

// Lease is a lease as it travels: its grantor (an API base URL), its ID,
// its expiration and what remained of it when it was written (for a
// holder whose clock is off).
type Lease struct {
	Grantor    string `json:"grantor"`
	ID         string `json:"id"`
	Expiration int64  `json:"expiration"`
	Remaining  int64  `json:"remaining"`
	// Cut, in the answer to a grant, names the limit that made the lease
	// shorter than asked: a key of the config file's limits object
	// ("serviceLeaseMax").
	Cut string `json:"cut,omitempty"`
}

// Remaining is the DURATION form of an expiration (a lease's
// "remaining"): the milliseconds left at now, 0 once it has passed,
// Forever for a lease that never ends (expiration Forever).
func Remaining(expiration, now int64) int64 {
	switch {
	case expiration == Forever:
		return Forever
	case expiration > now:
		return expiration - now
	}
	return 0
}

// Renewed is the answer to renewing one lease.
type Renewed struct {
	Expiration int64 `json:"expiration"`
	Granted    int64 `json:"granted"`
}

// Renewal is one lease of a batch renewal (LeaseMap.renewAll).
type Renewal struct {
	ID       string `json:"id"`
	Duration int64  `json:"duration"`
}

// BatchResult is one lease's outcome in a batch.
type BatchResult struct {
	ID         string `json:"id"`
	Expiration int64  `json:"expiration,omitempty"`
	// Cut names the limit that made the renewal shorter than asked
	// (Lease.Cut).
	Cut   string `json:"cut,omitempty"`
	Error *Error `json:"error,omitempty"`
}

// BatchResults answers a batch.
type BatchResults struct {
	Results []BatchResult `json:"results"`
}

// Listener is where remote events go.
type Listener struct {
	URL string `json:"url"`
}

// --- the lookup service ------------------------------------------------------

// LookupInfo describes the lookup service.
type LookupInfo struct {
	ServiceID string   `json:"serviceID"`
	Groups    []string `json:"groups"`
	Locator   string   `json:"locator"`
}

// Attribute is an entry of a service item: its type, the types it
// declares itself a subtype of, and its fields.
type Attribute struct {
	Type       string         `json:"type"`
	Supertypes []string       `json:"supertypes,omitempty"`
	Fields     map[string]any `json:"fields"`
}

// Item is a service item.
type Item struct {
	ServiceID  string          `json:"serviceID"`
	Types      []string        `json:"types"`
	Attributes []Attribute     `json:"attributes"`
	Endpoint   string          `json:"endpoint,omitempty"`
	Service    json.RawMessage `json:"service,omitempty"`
}

// Template matches items (a null field matches anything).
type Template struct {
	ServiceID  string      `json:"serviceID,omitempty"`
	Types      []string    `json:"types,omitempty"`
	Attributes []Attribute `json:"attributes,omitempty"`
}

// AttributeChange is one of the three changes of an item's attributes.
type AttributeChange struct {
	Add    []Attribute `json:"add,omitempty"`
	Modify *struct {
		Templates []Attribute  `json:"templates"`
		Changes   []*Attribute `json:"changes"`
	} `json:"modify,omitempty"`
	Set []Attribute `json:"set,omitempty"`
}

// The transitions of a notify registration.
const (
	MatchNoMatch = "MATCH_NOMATCH"
	NoMatchMatch = "NOMATCH_MATCH"
	MatchMatch   = "MATCH_MATCH"
)

// Registered answers a registration of an item.
type Registered struct {
	ServiceID string `json:"serviceID"`
	Lease     Lease  `json:"lease"`
}

// Items answers a query.
type Items struct {
	Items        []Item `json:"items"`
	TotalMatches int    `json:"totalMatches"`
	// NextCursor, in a listing, fetches the next page (?cursor=); absent
	// on the last.
	NextCursor string `json:"nextCursor,omitempty"`
	// Expirations are when the items' registrations end, in their order
	// (ms since the epoch; 9223372036854775807: never; 0: ended while
	// the answer was made).
	Expirations []int64 `json:"expirations,omitempty"`
	// Hint, for a query that matched nothing, says why where the
	// registry can tell (an attribute class or field no registered
	// service has).
	Hint string `json:"hint,omitempty"`
}

// Service is one registered item and when its lease ends.
type Service struct {
	Item       Item  `json:"item"`
	Expiration int64 `json:"expiration"`
}

// NotifyRegistration answers a notify request.
type NotifyRegistration struct {
	ID      string `json:"id"`
	EventID int64  `json:"eventID"`
	SeqNum  int64  `json:"seqNum"`
	Lease   Lease  `json:"lease"`
}

// --- the lookup discovery service ------------------------------------------------

// Registrar is a lookup service as the lookup discovery service reports
// it: a jinid one gives its API URL, a Java one's proxy stays an opaque
// marshalled object.
type Registrar struct {
	ServiceID string `json:"serviceID"`
	// StandIn: ServiceID stands in for the lookup service's own, which
	// its proxy (of a class jinid cannot read) does not tell, until it
	// announces it; it is then discarded under this one and discovered
	// under the real one. Reggie's and jinid's proxies are read: never
	// a stand-in.
	StandIn    bool     `json:"serviceIDStandIn,omitempty"`
	Host       string   `json:"host"`
	Port       int      `json:"port"`
	Groups     []string `json:"groups"`
	Locator    string   `json:"locator"`
	Kind       string   `json:"kind"` // "jinid" or "java"
	APIURL     *string  `json:"apiURL"`
	Marshalled []byte   `json:"marshalled"`
}

// LDSRegistered answers a registration with the lookup discovery
// service.
type LDSRegistered struct {
	ID      string `json:"id"`
	EventID int64  `json:"eventID"`
	SeqNum  int64  `json:"seqNum"`
	Lease   Lease  `json:"lease"`
}

// LDSRegistration is a registration's state.
type LDSRegistration struct {
	ID      string `json:"id"`
	EventID int64  `json:"eventID"`
	SeqNum  int64  `json:"seqNum"`
	// Groups null is ALL_GROUPS.
	Groups   []string `json:"groups"`
	Locators []string `json:"locators"`
	Lease    Lease    `json:"lease"`
}

// Registrars answers getRegistrars.
type Registrars struct {
	Registrars []Registrar `json:"registrars"`
}

// --- the lease renewal service ----------------------------------------------------

// RenewalSet is a new renewal set.
type RenewalSet struct {
	ID    string `json:"id"`
	Lease Lease  `json:"lease"`
}

// ClientLease is a lease in a renewal set.
type ClientLease struct {
	Lease
	DesiredExpiration int64 `json:"desiredExpiration,omitempty"`
	RenewDuration     int64 `json:"renewDuration,omitempty"`
}

// ListenerRegistration answers setting a renewal set's listener.
type ListenerRegistration struct {
	EventID int64 `json:"eventID"`
	SeqNum  int64 `json:"seqNum"`
	Lease   Lease `json:"lease"`
}

// --- the event mailbox ----------------------------------------------------------

// MailboxRegistration is a new mailbox registration.
type MailboxRegistration struct {
	ID       string   `json:"id"`
	Lease    Lease    `json:"lease"`
	Listener Listener `json:"listener"`
}

// EventKind names a kind of event a mailbox client wants no more of
// (addUnknownEvents): its source and event ID.
type EventKind struct {
	Source  json.RawMessage `json:"source"`
	EventID int64           `json:"eventID"`
}

// --- remote events -------------------------------------------------------------

// EventSource names what an event is about: a service and one of its
// registrations.
type EventSource struct {
	Service string `json:"service"`
	ID      string `json:"id"`
}

// RemoteEvent is what every remote event carries.
type RemoteEvent struct {
	Source   EventSource `json:"source"`
	EventID  int64       `json:"eventID"`
	SeqNum   int64       `json:"seqNum"`
	Handback []byte      `json:"handback"`
	Type     string      `json:"type"`
}

// Remote returns the common part of an event: every event type embeds
// it, so every one has this method.
func (e RemoteEvent) Remote() RemoteEvent { return e }

// The event types.
const (
	ServiceEventType           = "ServiceEvent"
	RemoteDiscoveryEventType   = "RemoteDiscoveryEvent"
	RenewalFailureEventType    = "RenewalFailureEvent"
	ExpirationWarningEventType = "ExpirationWarningEvent"
)

// ServiceEvent is the lookup service's event: an item's transition
// (MATCH_NOMATCH, NOMATCH_MATCH or MATCH_MATCH) for a notify
// registration's template. Item is null once it no longer matches.
type ServiceEvent struct {
	RemoteEvent
	ServiceID  string `json:"serviceID"`
	Transition string `json:"transition"`
	Item       *Item  `json:"item"`
}

// RemoteDiscoveryEvent is the lookup discovery service's event: lookup
// services discovered or discarded, with their groups by ServiceID.
type RemoteDiscoveryEvent struct {
	RemoteEvent
	Discarded  bool                `json:"discarded"`
	Registrars []Registrar         `json:"registrars"`
	Groups     map[string][]string `json:"groups"`
}

// RenewalFailureEvent says a client lease could not be renewed: the lease
// as last recorded, and the last failure recorded (null if none was).
type RenewalFailureEvent struct {
	RemoteEvent
	Lease Lease  `json:"lease"`
	Error *Error `json:"error"`
}

// ExpirationWarningEvent says a renewal set's own lease ends soon.
type ExpirationWarningEvent struct {
	RemoteEvent
	Lease      string `json:"lease"` // the set's lease ID
	Expiration int64  `json:"expiration"`
}

// --- access ---------------------------------------------------------------------

// Token is a bearer token as listed: never its secret.
type Token struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Scope   string `json:"scope"`             // read, client or admin
	Created int64  `json:"created"`           // ms since the epoch
	Expires int64  `json:"expires,omitempty"` // ms since the epoch; absent: never
}

// TokenRequest asks for a new token.
type TokenRequest struct {
	Name  string `json:"name"`
	Scope string `json:"scope"`
	// Duration is how long it works, in milliseconds; absent or 0: until
	// revoked.
	Duration int64 `json:"duration,omitempty"`
}

// NewToken is a token just made: the only answer that carries its secret.
type NewToken struct {
	Token
	Secret string `json:"token"`
}

// Tokens lists the tokens.
type Tokens struct {
	Tokens []Token `json:"tokens"`
}

// JavaName reports whether s is a Java binary name: identifiers (a
// letter, _ or $, then letters, digits, _ or $) joined by dots, as
// com.example.Printer or com.example.Outer$Inner.
func JavaName(s string) bool {
	if len(s) > 1024 {
		return false
	}
	for _, part := range strings.Split(s, ".") {
		if part == "" {
			return false
		}
		for i, r := range part {
			ok := unicode.IsLetter(r) || r == '_' || r == '$' || i > 0 && unicode.IsDigit(r)
			if !ok {
				return false
			}
		}
	}
	return true
}
