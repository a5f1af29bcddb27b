package app

import (
	"log/slog"
	"time"

	"github.com/jinid/jinid/discovery/group"
	"github.com/jinid/jinid/internal/clock"
	"github.com/jinid/jinid/internal/http1"
	"github.com/jinid/jinid/internal/lifecycle"
	"github.com/jinid/jinid/services/event"
	"github.com/jinid/jinid/services/lds"
	"github.com/jinid/jinid/services/lease"
	"github.com/jinid/jinid/services/mailbox"
	"github.com/jinid/jinid/services/outbound"
	"github.com/jinid/jinid/services/renewal"
	"github.com/jinid/jinid/services/store"
	"github.com/jinid/jinid/services/txn"
)

// serviceSet is the helper services on one store, with their lease
// grantor: the deployment's (a single box's), or a cluster shard's. One
// function builds both (buildSet).
type serviceSet struct {
	grantor *lease.Grantor
	renewal *renewal.Service
	mailbox *mailbox.Service
	txn     *txn.Service // nil with NoTransactions
	lds     *lds.Service
	// renewers are the renewal service's, by grantor: the Java side
	// adds Java's, for the leases Java hands in.
	renewers *renewal.Renewers
}

// setOf is what differs between the sets.
type setOf struct {
	log        *slog.Logger
	policy     *outbound.Policy
	dispatcher *event.Dispatcher
	// shard is the set's shard of a cluster's work (-1: the
	// deployment's): its IDs say it (they route requests), its mailbox
	// listeners bear the cluster's tag, its events IDs are its own, and
	// the node's figures count it.
	shard int
	// newID makes the set's IDs (nil: ids.New).
	newID func() string
	// ldsMulticast is the lookup discovery service's own multicast (nil:
	// none, or the node's discovery, shared).
	ldsMulticast *group.Multicast
}

// buildSet makes the helper services of set c on st, with the limits of
// the moment. Nothing is started: add adds them to a lifecycle. The
// caller sets the grantor's quotas (setQuotas) once every kind of lease
// on it is registered (the lookup service's too).
func (d *Daemon) buildSet(st *store.Store, c setOf) (serviceSet, error) {
	d.limitsMu.Lock()
	lm, perReg, events := d.limits, d.cfg.MailboxMaxPerRegistration, d.cfg.MailboxMaxEvents
	d.limitsMu.Unlock()
	out := func(timeout time.Duration) *http1.Client {
		return outbound.New(outbound.Config{Timeout: timeout, Namespace: d.cfg.Namespace, Policy: c.policy})
	}
	var s serviceSet
	var err error
	s.grantor = lease.New(st, clock.Real{}, c.log)
	if c.newID != nil {
		s.grantor.SetNewID(c.newID)
	}
	mb := mailbox.Config{Store: st, Grantor: s.grantor, Outbound: c.policy, Logger: c.log.With("service", "mailbox"),
		Policy:             leasePolicy(mailbox.DefaultPolicy, lm.MailboxLeaseMax, "mailboxLeaseMax"),
		MaxPerRegistration: perReg, MaxEvents: events,
		MaxBytesPerRegistration: int64(lm.MailboxBytesPerRegistration), MaxBytes: int64(lm.MailboxBytes),
		Client: out(outbound.DefaultTimeout), NewID: c.newID, ShardTag: d.mailboxTag()}
	tx := txn.ServiceConfig{Store: st, Grantor: s.grantor, Outbound: c.policy,
		Policy: leasePolicy(txn.DefaultPolicy, lm.TransactionLeaseMax, "transactionLeaseMax"),
		Client: out(time.Minute), Manager: d.managerURL(), Self: d.nodeAPI, Logger: c.log.With("service", "txn"), Metrics: d.obs.metrics, NewID: c.newID}
	ld := lds.Config{Store: st, Grantor: s.grantor, Outbound: c.policy, Dispatcher: c.dispatcher, Logger: c.log.With("service", "lds"),
		Policy: leasePolicy(lds.DefaultPolicy, lm.LDSLeaseMax, "ldsLeaseMax"), Multicast: c.ldsMulticast,
		Namespace: d.cfg.Namespace, MaxPerRegistration: lm.LDSInterest, NewID: c.newID}
	if c.shard >= 0 {
		mb.ListenerTag = d.mailboxTag()
		tx.NoGauges = true // the node's figures count the shards' together
		ld.EventIDBase = shardEventIDs(c.shard)
	} else {
		tx.Held = d.txnCounts
		ld.OnEvent = d.obs.onDiscoveryEvent
	}
	h := renewal.HTTPRenewer{Client: out(30 * time.Second)}
	s.renewers = &renewal.Renewers{HTTP: h}
	if s.renewal, err = renewal.New(renewal.Config{Store: st, Grantor: s.grantor, Outbound: c.policy, Dispatcher: c.dispatcher,
		Policy:       leasePolicy(renewal.DefaultPolicy, lm.RenewalSetLeaseMax, "renewalSetLeaseMax"),
		SafetyMargin: d.cfg.RenewalMargin, Logger: c.log.With("service", "renewal"),
		Renewer: s.renewers, MaxLeasesPerSet: lm.LeasesPerSet,
		Metrics: d.obs.metrics, OnFailure: d.obs.onRenewalFailed, NewID: c.newID}); err != nil {
		return s, err
	}
	if s.mailbox, err = mailbox.New(mb); err != nil {
		return s, err
	}
	// The transaction manager resumes the roll-forward of what it
	// committed before a restart (or before the shard moved here),
	// before the API answers anything.
	if !d.cfg.NoTransactions {
		if s.txn, err = txn.NewService(tx); err != nil {
			return s, err
		}
	}
	// The lookup discovery service discovers through the namespace's
	// multicast host, which the lookup service announces on too (a
	// node of a cluster's: its discovery, shared with its shards').
	if s.lds, err = lds.New(d.ldsConfig(ld, lm)); err != nil {
		return s, err
	}
	return s, nil
}

// add adds the set's services (but its lookup discovery service, which
// needs discovery built first) to parts, in the order they start.
func (s serviceSet) add(parts *lifecycle.Group) {
	parts.Add("leases", s.grantor) // every kind registered: expire what lapsed
	parts.Add("the lease renewal service", s.renewal)
	parts.Add("the event mailbox", s.mailbox)
	if s.txn != nil {
		parts.Add("the transaction manager", s.txn)
	}
}

// shardEventIDs is where the event IDs of shard k's registrations begin:
// apart from every other shard's and the deployment's.
func shardEventIDs(k int) int64 { return int64(k+1) << 40 }
