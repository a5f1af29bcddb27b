package javahelpers

import (
	"context"
	_ "embed"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/jinid/jinid/java/javaio"
	"github.com/jinid/jinid/java/jeri"
	"github.com/jinid/jinid/java/lineage"
	"github.com/jinid/jinid/java/reggie"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/fault"
	"github.com/jinid/jinid/services/txn"
)

//go:embed mahalo.methods
var mahaloMethods string

// MahaloTypes are the types of Mahalo's proxy, as the lookup service
// matches them.
var MahaloTypes = []string{
	"org.apache.river.mahalo.proxy.TxnMgrProxy$ConstrainableTxnMgrProxy",
	"org.apache.river.mahalo.proxy.TxnMgrProxy",
	"net.jini.core.transaction.server.TransactionManager",
	"net.jini.admin.Administrable",
	"net.jini.core.constraint.RemoteMethodControl",
	"net.jini.id.ReferentUuid",
	"net.jini.security.proxytrust.ProxyAccessor",
	"java.io.Serializable",
}

// The methods of a Java TransactionParticipant the manager calls, by
// the engine's operation.
var participantMethods = map[apitypes.ParticipantOp]int64{
	apitypes.OpPrepare:          lineage.MethodHash("prepare", "(Lnet/jini/core/transaction/server/TransactionManager;J)I"),
	apitypes.OpCommit:           lineage.MethodHash("commit", "(Lnet/jini/core/transaction/server/TransactionManager;J)V"),
	apitypes.OpAbort:            lineage.MethodHash("abort", "(Lnet/jini/core/transaction/server/TransactionManager;J)V"),
	apitypes.OpPrepareAndCommit: lineage.MethodHash("prepareAndCommit", "(Lnet/jini/core/transaction/server/TransactionManager;J)I"),
}

// The states and votes of net.jini.core.transaction.server.TransactionConstants.
const (
	javaActive     = 1
	javaVoting     = 2
	javaPrepared   = 3
	javaNotChanged = 4
	javaCommitted  = 5
	javaAborted    = 6
)

// maxJavaTransactions bounds the Java names of transactions kept: one
// per transaction a Java client made and the manager still holds.
const maxJavaTransactions = 100_000

// Mahalo is Mahalo's server as Java clients call it: a jeri.Object, on
// jinid's transaction manager; and the caller of the Java participants
// that join (a txn.Caller).
//
// Java names a transaction by a long, jinid by 128 bits: a transaction a
// Java client creates is named by the first 64 bits of its ID, and the
// long kept with the ID while the manager holds it. (A transaction an
// HTTP client made is not reachable from Java; one Java made is from
// HTTP, by its ID.)
type Mahalo struct {
	*face
	txn     *txn.Service
	object  jeri.Uuid
	methods *lineage.Methods
	proxies proxyCache
	remotes *remotes

	mu  sync.Mutex
	ids map[int64]string // Java's long → the transaction's ID
}

// NewMahalo returns the transaction manager's Java face, on t; it calls
// the Java participants t's transactions have (txn.Service.SetJavaCaller).
func NewMahalo(cfg Config, t *txn.Service) (*Mahalo, error) {
	f, err := newFace(cfg)
	if err != nil {
		return nil, err
	}
	m, err := lineage.ParseMethods(mahaloMethods)
	if err != nil {
		return nil, fmt.Errorf("Mahalo's methods: %w", err)
	}
	s := &Mahalo{face: f, txn: t, object: cfg.Identity.Derived("mahalo"), methods: m, ids: map[int64]string{}}
	if s.remotes, err = newRemotes(f); err != nil {
		return nil, err
	}
	t.SetJavaCaller(s)
	return s, nil
}

// Object is the Mahalo server's object Uuid, to export it under.
func (s *Mahalo) Object() jeri.Uuid { return s.object }

// Close closes the connections kept to participants.
func (s *Mahalo) Close() error {
	s.remotes.close()
	return nil
}

func (s *Mahalo) server(host string) *javaio.Object { return s.remoteRef("mahalo", s.object, host) }

func (s *Mahalo) proxy(host string) *javaio.Object {
	return javaio.NewObject(s.class("org.apache.river.mahalo.proxy.TxnMgrProxy$ConstrainableTxnMgrProxy")).
		Set("backend", s.server(host)).Set("proxyID", s.l.Uuid(s.object))
}

// Proxy returns Mahalo's proxy (ConstrainableTxnMgrProxy) for clients
// that reach jinid at host, as an object stream.
func (s *Mahalo) Proxy(host string) ([]byte, error) {
	return s.proxies.get(host, func() *javaio.Object { return s.proxy(host) })
}

// Invoke serves a call to Mahalo's server.
func (s *Mahalo) Invoke(ctx context.Context, c *jeri.Call) jeri.Reply {
	return s.counted("mahalo", s.methods, c, s.invoke(ctx, c))
}

func (s *Mahalo) invoke(ctx context.Context, c *jeri.Call) jeri.Reply {
	key, ok := s.methods.Method(c.Method)
	if !ok {
		return jeri.Throw(jeri.UnrecognizedMethod(c.Method))
	}
	if r, denied := s.may(c.Conn, key, "getState/1", "getTransaction/1", "manager/0"); denied {
		return r
	}
	k := s.call(ctx, c, txn.LeaseKind)
	if r, ok := k.landlord(key); ok {
		return r
	}
	switch key {
	case "create/1":
		return s.create(k)
	case "join/3":
		return s.join(k)
	case "getState/1":
		return s.getState(k)
	case "commit/1", "commit/2", "abort/1", "abort/2":
		return s.settle(k, key)
	case "getTransaction/1":
		id, err := k.c.Args.ReadLong()
		if err != nil {
			return argError(err)
		}
		if _, err := s.id(id); err != nil {
			return s.fail(k, err)
		}
		return returnObject(javaio.NewObject(s.class("net.jini.core.transaction.server.ServerTransaction")).
			Set("id", id).Set("mgr", s.proxy(k.host)))
	case "manager/0", "getServiceProxy/0":
		return returnObject(s.proxy(k.host))
	}
	return jeri.Throw(jeri.NewException("java.lang.UnsupportedOperationException",
		"jinid's transaction manager has no Java admin interface: administer it with jinid's HTTP API or CLI"))
}

// javaID is the long Java names a transaction by.
func javaID(id string) (int64, error) {
	b, err := hex.DecodeString(id)
	if err != nil || len(b) < 8 {
		return 0, fmt.Errorf("transaction ID %q is not 128 bits", id)
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}

// id is the transaction Java names by long.
func (s *Mahalo) id(long int64) (string, error) {
	s.mu.Lock()
	id, ok := s.ids[long]
	s.mu.Unlock()
	if !ok {
		return "", fault.New(apitypes.UnknownTransaction, "no such transaction")
	}
	if _, _, err := s.txn.State(id); err != nil {
		s.mu.Lock()
		delete(s.ids, long) // settled and forgotten
		s.mu.Unlock()
		return "", err
	}
	return id, nil
}

// fail answers an error of the manager with the exception Mahalo throws.
func (s *Mahalo) fail(k *call, err error) jeri.Reply {
	var f *fault.Error
	if !errors.As(err, &f) {
		return k.fail(err)
	}
	class := map[apitypes.Code]string{
		apitypes.UnknownTransaction: "net.jini.core.transaction.UnknownTransactionException",
		apitypes.CannotJoin:         "net.jini.core.transaction.CannotJoinException",
		apitypes.CannotCommit:       "net.jini.core.transaction.CannotCommitException",
		apitypes.CannotAbort:        "net.jini.core.transaction.CannotAbortException",
		apitypes.CrashCount:         "net.jini.core.transaction.server.CrashCountException",
		apitypes.TimeoutExpired:     "net.jini.core.transaction.TimeoutExpiredException",
		apitypes.OutcomeUnknown:     "net.jini.core.transaction.TransactionException",
	}[f.Code]
	if class == "" {
		return k.fail(err)
	}
	exc := s.l.Exception(s.class(class), f.Message)
	if f.Code == apitypes.TimeoutExpired && f.Committed != nil {
		exc.Set("committed", *f.Committed)
	}
	return jeri.Throw(exc)
}

// create is create(long leaseDuration): TransactionManager.Created, the
// transaction's long and its lease.
func (s *Mahalo) create(k *call) jeri.Reply {
	d, err := k.c.Args.ReadLong()
	if err != nil {
		return argError(err)
	}
	s.mu.Lock()
	full := len(s.ids) >= maxJavaTransactions
	s.mu.Unlock()
	if full {
		s.forgetSettled()
	}
	id, rec, err := s.txn.Create(k.ctx, d, txn.Ref{}, k.owner())
	if err != nil {
		return s.fail(k, err)
	}
	long, err := javaID(id)
	if err != nil {
		return k.fail(err)
	}
	s.mu.Lock()
	s.ids[long] = id
	s.mu.Unlock()
	ls, err := s.landlordLease(s.server(k.host), s.object, rec.ID, rec.Expiration)
	if err != nil {
		return k.fail(err)
	}
	return returnObject(javaio.NewObject(s.class("net.jini.core.transaction.server.TransactionManager$Created")).
		Set("id", long).Set("lease", ls))
}

// forgetSettled drops the names of transactions the manager no longer
// holds.
func (s *Mahalo) forgetSettled() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for long, id := range s.ids {
		if _, _, err := s.txn.State(id); err != nil {
			delete(s.ids, long)
		}
	}
}

// join is join(long, TransactionParticipant, long crashCount).
func (s *Mahalo) join(k *call) jeri.Reply {
	long, err := k.c.Args.ReadLong()
	if err != nil {
		return argError(err)
	}
	part, reply := k.required("the participant")
	if reply != nil {
		return reply
	}
	crash, err := k.c.Args.ReadLong()
	if err != nil {
		return argError(err)
	}
	id, err := s.id(long)
	if err != nil {
		return s.fail(k, err)
	}
	if err := s.txn.Join(id, txn.Participant{URL: part, CrashCount: crash}); err != nil {
		return s.fail(k, err)
	}
	return jeri.Return(nil)
}

// getState is getState(long): TransactionConstants' state.
func (s *Mahalo) getState(k *call) jeri.Reply {
	long, err := k.c.Args.ReadLong()
	if err != nil {
		return argError(err)
	}
	id, err := s.id(long)
	if err != nil {
		return s.fail(k, err)
	}
	st, _, err := s.txn.State(id)
	if err != nil {
		return s.fail(k, err)
	}
	return jeri.Return(func(e *javaio.Encoder) error { e.WriteInt(javaState(st)); return nil })
}

func javaState(st txn.State) int32 {
	switch st {
	case txn.Active:
		return javaActive
	case txn.Voting:
		return javaVoting
	case txn.Committed:
		return javaCommitted
	}
	return javaAborted
}

// settle is commit and abort, with or without waitFor.
func (s *Mahalo) settle(k *call, key string) jeri.Reply {
	long, err := k.c.Args.ReadLong()
	if err != nil {
		return argError(err)
	}
	waitFor := time.Duration(-1)
	if key == "commit/2" || key == "abort/2" {
		ms, err := k.c.Args.ReadLong()
		if err != nil {
			return argError(err)
		}
		waitFor = time.Duration(max(ms, 0)) * time.Millisecond
	}
	id, err := s.id(long)
	if err != nil {
		return s.fail(k, err)
	}
	op := s.txn.Commit
	if key[:5] == "abort" {
		op = s.txn.Abort
	}
	if _, err := op(k.ctx, id, waitFor); err != nil {
		return s.fail(k, err)
	}
	return jeri.Return(nil)
}

// Call calls a Java participant (txn.Caller): prepare, commit, abort or
// prepareAndCommit, with Mahalo's proxy for the manager, as Mahalo
// does.
func (s *Mahalo) Call(ctx context.Context, p txn.Participant, op apitypes.ParticipantOp, id string, _ int) (apitypes.Vote, error) {
	u, err := url.Parse(p.URL)
	var obj jeri.Uuid
	if err == nil {
		err = obj.UnmarshalText([]byte(u.Path[min(1, len(u.Path)):]))
	}
	if err != nil {
		return 0, fmt.Errorf("%w: participant %q", txn.ErrNoSuchObject, p.URL)
	}
	long, err := javaID(id)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", txn.ErrIndefinite, err)
	}
	rm, err := s.remotes.remote(u, obj)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", txn.ErrNoSuchObject, err)
	}
	mgr := s.proxy(u.Query().Get("via"))
	dec, err := rm.Call(ctx, "TransactionParticipant."+string(op), participantMethods[op], func(e *javaio.Encoder) error {
		if err := e.WriteObject(mgr); err != nil {
			return err
		}
		e.WriteLong(long)
		return nil
	})
	var re *reggie.RemoteError
	switch {
	case errors.Is(err, reggie.ErrNoSuchObject):
		return 0, fmt.Errorf("%w: %w", txn.ErrNoSuchObject, err)
	case errors.As(err, &re) && re.Class == "net.jini.core.transaction.UnknownTransactionException":
		return 0, txn.ErrUnknownTransaction
	case err != nil:
		return 0, fmt.Errorf("%w: %w", txn.ErrIndefinite, err)
	case op == apitypes.OpCommit || op == apitypes.OpAbort:
		return 0, nil
	}
	v, err := dec.ReadInt()
	if err != nil {
		return 0, fmt.Errorf("%w: reading the vote: %w", txn.ErrIndefinite, err)
	}
	switch v {
	case javaPrepared:
		return apitypes.VotePrepared, nil
	case javaNotChanged:
		return apitypes.VoteNotChanged, nil
	case javaAborted:
		return apitypes.VoteAborted, nil
	case javaCommitted:
		if op == apitypes.OpPrepareAndCommit {
			return apitypes.VoteCommitted, nil
		}
	}
	return 0, fmt.Errorf("%w: vote %d to %s", txn.ErrIndefinite, v, op)
}
