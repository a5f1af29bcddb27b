package app

import (
	"cmp"
	"errors"
	"fmt"
	"reflect"

	"github.com/jinid/jinid/services/lds"
	"github.com/jinid/jinid/services/lease"
	"github.com/jinid/jinid/services/lookup"
	"github.com/jinid/jinid/services/mailbox"
	"github.com/jinid/jinid/services/renewal"
	"github.com/jinid/jinid/services/store"
	"github.com/jinid/jinid/services/txn"
)

// Limits bound what the LAN's clients and peers may cost the daemon:
// connections, sizes and quotas. Each is a key of the config file's
// "limits" object (docs/security.md lists them with their defaults);
// beyond one, a request is answered 413, 429 or 503 with Retry-After,
// naming it. A zero field takes its default.
type Limits struct {
	// APIConns and APIConnsPerSource cap the network API's connections,
	// in all and from one address (this host's own have as many again);
	// SocketConns, the unix socket's.
	APIConns          int `json:"apiConns"`
	APIConnsPerSource int `json:"apiConnsPerSource"`
	SocketConns       int `json:"socketConns"`
	// DiscoveryConns and DiscoveryConnsPerSource cap unicast discovery's.
	DiscoveryConns          int `json:"discoveryConns"`
	DiscoveryConnsPerSource int `json:"discoveryConnsPerSource"`
	// SourcePrefix4 and SourcePrefix6 are the prefix lengths a source is
	// counted by for every per-source cap (the API's, unicast
	// discovery's, Jini ERI's): an IPv6 host has a /64 of its own and
	// may take any address of it.
	SourcePrefix4 int `json:"sourcePrefix4"`
	SourcePrefix6 int `json:"sourcePrefix6"`
	// JavaBuffered and JavaBufferedTotal bound the bytes Java clients'
	// calls hold (from their first byte until answered) on one Jini ERI
	// connection and on all.
	JavaBuffered      int `json:"javaBuffered"`
	JavaBufferedTotal int `json:"javaBufferedTotal"`
	// JavaConns and JavaConnsPerSource cap Java clients' Jini ERI
	// connections, in all and from one source: JGDMS multiplexes a
	// program's calls on its connections and opens more when they are
	// busy.
	JavaConns          int `json:"javaConns"`
	JavaConnsPerSource int `json:"javaConnsPerSource"`
	// ConnectBacks run at once to answer multicast requests, and at most
	// ConnectBacksPending wait.
	ConnectBacks        int `json:"connectBacks"`
	ConnectBacksPending int `json:"connectBacksPending"`
	// Contacts run at once with lookup services that announced (for the
	// lookup discovery service), and at most ContactsPending wait.
	Contacts        int `json:"contacts"`
	ContactsPending int `json:"contactsPending"`

	// BodyBytes bounds a request body; ItemBytes a service item; Batch
	// the leases of a batch request.
	BodyBytes int `json:"bodyBytes"`
	ItemBytes int `json:"itemBytes"`
	Batch     int `json:"batch"`
	// PageSize is a listing's page unless the client says, MaxPage its
	// most, PageBytes the most bytes of items in one.
	PageSize  int `json:"pageSize"`
	MaxPage   int `json:"maxPage"`
	PageBytes int `json:"pageBytes"`
	// Listings are the pages of items built and sent at once; more
	// wait, 5 s at most, then are told to try again (503).
	Listings int `json:"listings"`

	// Quotas, in all and per client (a token, or an anonymous caller's
	// address; an administrator is counted in all only).
	Items                     int `json:"items"`
	ItemsPerClient            int `json:"itemsPerClient"`
	Notifies                  int `json:"notifies"`
	NotifiesPerClient         int `json:"notifiesPerClient"`
	LDSRegistrations          int `json:"ldsRegistrations"`
	LDSRegistrationsPerClient int `json:"ldsRegistrationsPerClient"`
	RenewalSets               int `json:"renewalSets"`
	RenewalSetsPerClient      int `json:"renewalSetsPerClient"`
	Mailboxes                 int `json:"mailboxes"`
	MailboxesPerClient        int `json:"mailboxesPerClient"`
	// Transactions not yet committed or aborted (each holds a lease).
	Transactions          int `json:"transactions"`
	TransactionsPerClient int `json:"transactionsPerClient"`
	// ItemsBytes and ItemsBytesPerClient bound the bytes of service
	// items (the lookup service holds them in memory).
	ItemsBytes          int `json:"itemsBytes"`
	ItemsBytesPerClient int `json:"itemsBytesPerClient"`
	// LDSInterest bounds one LDS registration's groups, and its
	// locators; LeasesPerSet one renewal set's leases.
	LDSInterest  int `json:"ldsInterest"`
	LeasesPerSet int `json:"leasesPerSet"`
	// MailboxBytesPerRegistration and MailboxBytes bound the bytes of the
	// events mailboxes store (their counts are --mailbox-quota and
	// --mailbox-total-quota).
	MailboxBytesPerRegistration int `json:"mailboxBytesPerRegistration"`
	MailboxBytes                int `json:"mailboxBytes"`

	// The longest lease granted of each kind, in seconds: a request for
	// more, FOREVER included, gets this, and its answer names the limit
	// (apitypes.Lease.Cut). A lease is how the specifications free what
	// a client left behind; keep them bounded.
	ServiceLeaseMax     int `json:"serviceLeaseMax"`
	NotifyLeaseMax      int `json:"notifyLeaseMax"`
	LDSLeaseMax         int `json:"ldsLeaseMax"`
	RenewalSetLeaseMax  int `json:"renewalSetLeaseMax"`
	MailboxLeaseMax     int `json:"mailboxLeaseMax"`
	TransactionLeaseMax int `json:"transactionLeaseMax"`

	// MemoryBytes is the Go runtime's soft memory limit (GOMEMLIMIT, if
	// set, overrides it): the collector runs harder near it. It bounds
	// nothing by itself; the limits above do.
	MemoryBytes int `json:"memoryBytes"`
}

// DefaultLimits are the limits unless configured.
func DefaultLimits() Limits {
	return Limits{
		APIConns: 512, APIConnsPerSource: 64, SocketConns: 128,
		DiscoveryConns: 256, DiscoveryConnsPerSource: 8, SourcePrefix4: 32, SourcePrefix6: 64,
		JavaBuffered: 4 << 20, JavaBufferedTotal: 32 << 20, JavaConns: 256, JavaConnsPerSource: 16,
		ConnectBacks: 64, ConnectBacksPending: 128, Contacts: 64, ContactsPending: 256,
		BodyBytes: 64 << 10, ItemBytes: 64 << 10, Batch: 1000,
		PageSize: 100, MaxPage: 1000, PageBytes: 1 << 20, Listings: 4,
		Items: 20_000, ItemsPerClient: 2_000, ItemsBytes: 16 << 20, ItemsBytesPerClient: 4 << 20, Notifies: 2_000, NotifiesPerClient: 200,
		LDSRegistrations: 1_000, LDSRegistrationsPerClient: 100, RenewalSets: 1_000, RenewalSetsPerClient: 100,
		Mailboxes: 1_000, MailboxesPerClient: 100, Transactions: 10_000, TransactionsPerClient: 1_000,
		LDSInterest: 256, LeasesPerSet: 10_000,
		MailboxBytesPerRegistration: 16 << 20, MailboxBytes: 256 << 20,
		ServiceLeaseMax: 3600, NotifyLeaseMax: 3600, LDSLeaseMax: 3600, RenewalSetLeaseMax: 86400, MailboxLeaseMax: 86400,
		TransactionLeaseMax: 3600,
		MemoryBytes:         48 << 20,
	}
}

// withDefaults fills in the zero fields.
func (l Limits) withDefaults() Limits {
	v, d := reflect.ValueOf(&l).Elem(), reflect.ValueOf(DefaultLimits())
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			v.Field(i).Set(d.Field(i))
		}
	}
	return l
}

// validate reports a limit that makes no sense.
func (l Limits) validate() error {
	var errs []error
	v, t := reflect.ValueOf(l), reflect.TypeOf(l)
	for i := range v.NumField() {
		if v.Field(i).Int() < 0 {
			errs = append(errs, fmt.Errorf("limits.%s %d: want a positive number (or 0 for the default, %v)",
				t.Field(i).Tag.Get("json"), v.Field(i).Int(), reflect.ValueOf(DefaultLimits()).Field(i)))
		}
	}
	if l.SourcePrefix4 > 32 {
		errs = append(errs, fmt.Errorf("limits.sourcePrefix4 %d: an IPv4 prefix is 32 bits at most", l.SourcePrefix4))
	}
	if l.SourcePrefix6 > 128 {
		errs = append(errs, fmt.Errorf("limits.sourcePrefix6 %d: an IPv6 prefix is 128 bits at most", l.SourcePrefix6))
	}
	return errors.Join(errs...)
}

// setQuotas gives the grantor the quotas of each kind of lease (the
// services have registered them).
func (d *Daemon) setQuotas(g *lease.Grantor) { setQuotas(g, d.store, d.limits) }

// setQuotas gives g, a grantor on st, the quotas of l.
func setQuotas(g *lease.Grantor, st *store.Store, l Limits) {
	batch := cmp.Or(l.Batch, lease.DefaultMaxBatch)
	// A batch is one transaction, a cancellation releasing a few keys a
	// lease: a store in etcd bounds it (the cluster's --max-txn-ops).
	if most := st.Chunk(batch, 4); most < batch {
		batch = most
	}
	g.SetMaxBatch(batch)
	for kind, q := range map[string]lease.Quota{
		lookup.ItemLease:   {Total: l.Items, PerOwner: l.ItemsPerClient, TotalKey: "items", PerOwnerKey: "itemsPerClient"},
		lookup.NotifyLease: {Total: l.Notifies, PerOwner: l.NotifiesPerClient, TotalKey: "notifies", PerOwnerKey: "notifiesPerClient"},
		lds.LeaseKind: {Total: l.LDSRegistrations, PerOwner: l.LDSRegistrationsPerClient,
			TotalKey: "ldsRegistrations", PerOwnerKey: "ldsRegistrationsPerClient"},
		renewal.SetLease:  {Total: l.RenewalSets, PerOwner: l.RenewalSetsPerClient, TotalKey: "renewalSets", PerOwnerKey: "renewalSetsPerClient"},
		mailbox.LeaseKind: {Total: l.Mailboxes, PerOwner: l.MailboxesPerClient, TotalKey: "mailboxes", PerOwnerKey: "mailboxesPerClient"},
		txn.LeaseKind: {Total: l.Transactions, PerOwner: l.TransactionsPerClient,
			TotalKey: "transactions", PerOwnerKey: "transactionsPerClient"},
	} {
		g.SetQuota(kind, q)
	}
}

// Effective is the limits the daemon runs with: the zero ones are their
// defaults.
func (l Limits) Effective() Limits { return l.withDefaults() }

// leasePolicy is a kind's lease policy with its maximum from limits
// (seconds, named key): the default is never above it.
func leasePolicy(p lease.Policy, maxSeconds int, key string) lease.Policy {
	p.Max, p.MaxKey = int64(maxSeconds)*1000, key
	p.Default = min(p.Default, p.Max)
	return p
}
