package jeri

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"

	"github.com/jinid/jinid/java/javaio"
)

// Uuid is a net.jini.id.Uuid: bits0 then bits1, big-endian.
type Uuid [16]byte

func (u Uuid) String() string {
	h := hex.EncodeToString(u[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// MarshalText writes the Uuid in its usual form.
func (u Uuid) MarshalText() ([]byte, error) { return []byte(u.String()), nil }

// UnmarshalText reads the usual form.
func (u *Uuid) UnmarshalText(b []byte) error {
	s := strings.ReplaceAll(string(b), "-", "")
	raw, err := hex.DecodeString(s)
	if err != nil || len(raw) != 16 || len(b) != 36 {
		return fmt.Errorf("uuid %q: want 8-4-4-4-12 hex digits", b)
	}
	copy(u[:], raw)
	return nil
}

// Bits returns the Uuid's two longs.
func (u Uuid) Bits() (int64, int64) {
	return int64(binary.BigEndian.Uint64(u[:8])), int64(binary.BigEndian.Uint64(u[8:]))
}

// UuidOf returns the Uuid of two longs.
func UuidOf(bits0, bits1 int64) Uuid {
	var u Uuid
	binary.BigEndian.PutUint64(u[:8], uint64(bits0))
	binary.BigEndian.PutUint64(u[8:], uint64(bits1))
	return u
}

// Status bytes of a reply.
const (
	noSuchObject = 0x00
	objectHere   = 0x01

	versionMismatch = 0x00
	statusReturn    = 0x01
	statusThrow     = 0x02
)

// Call is one remote call as the object serving it sees it.
type Call struct {
	Object Uuid
	Method int64
	// Args reads the arguments, in declaration order.
	Args *javaio.Decoder
	Conn Conn
}

// Object serves calls to one exported object.
type Object interface {
	// Invoke runs the call and returns its reply, made with Return or
	// Throw. It must answer every call, including one to a method it
	// does not have (with Throw(UnrecognizedMethod(...))).
	Invoke(ctx context.Context, call *Call) Reply
}

// Reply is a call's answer: the bytes after the OBJECT_HERE byte.
type Reply []byte

// Return answers with a return value, which write puts on the stream
// (nothing, for void).
func Return(write func(e *javaio.Encoder) error) Reply {
	e := javaio.NewEncoder(true)
	if write != nil {
		if err := write(e); err != nil {
			return Throw(NewException("java.rmi.UnmarshalException", fmt.Sprintf("jinid could not encode its reply: %v", err)))
		}
	}
	return append(Reply{statusReturn}, e.Bytes()...)
}

// Throw answers with an exception.
func Throw(exc *javaio.Object) Reply {
	b, err := javaio.Encode(exc, true)
	if err != nil {
		// Exceptions are built by jinid; failing to encode one is a bug,
		// and the client still needs an answer.
		b, _ = javaio.Encode(NewException("java.rmi.UnmarshalException", "jinid could not encode an exception"), true)
	}
	return append(Reply{statusThrow}, b...)
}

// Dispatcher routes calls to exported objects by Uuid. It is a Handler.
type Dispatcher struct {
	mu      sync.RWMutex
	objects map[Uuid]Object
}

// NewDispatcher returns a dispatcher with nothing exported.
func NewDispatcher() *Dispatcher {
	return &Dispatcher{objects: make(map[Uuid]Object)}
}

// Export makes o answer calls to id.
func (d *Dispatcher) Export(id Uuid, o Object) {
	d.mu.Lock()
	d.objects[id] = o
	d.mu.Unlock()
}

// Unexport stops answering calls to id.
func (d *Dispatcher) Unexport(id Uuid) {
	d.mu.Lock()
	delete(d.objects, id)
	d.mu.Unlock()
}

// Handle answers one call's request bytes.
func (d *Dispatcher) Handle(ctx context.Context, req []byte, conn Conn) []byte {
	if len(req) < 18 {
		return throwHere(UnmarshalError("jinid: call of %d bytes, too short for an object identifier and header", len(req)))
	}
	id := Uuid(req[:16])
	d.mu.RLock()
	o := d.objects[id]
	d.mu.RUnlock()
	if o == nil {
		return []byte{noSuchObject}
	}
	version, integrity := req[16], req[17]
	if version != 0 {
		return []byte{objectHere, versionMismatch}
	}
	if integrity != 0 {
		return throwHere(UnmarshalError("jinid: integrity-protected calls are not supported"))
	}
	args, err := javaio.NewDecoder(req[18:])
	if err != nil {
		return throwHere(UnmarshalError("jinid: reading the call: %v", err))
	}
	hash, err := args.ReadLong()
	if err != nil {
		return throwHere(UnmarshalError("jinid: reading the method hash: %v", err))
	}
	reply := o.Invoke(ctx, &Call{Object: id, Method: hash, Args: args, Conn: conn})
	return append([]byte{objectHere}, reply...)
}

func throwHere(exc *javaio.Object) []byte {
	return append([]byte{objectHere}, Throw(exc)...)
}

// UnmarshalError is the java.rmi.UnmarshalException a Java server throws
// for a call it cannot read.
func UnmarshalError(format string, args ...any) *javaio.Object {
	return NewException("java.rmi.UnmarshalException", fmt.Sprintf(format, args...))
}

// UnrecognizedMethod is what Java's dispatcher throws for a method hash
// the object does not have.
func UnrecognizedMethod(hash int64) *javaio.Object {
	return UnmarshalError("unrecognized method hash %016x: method not supported by remote object", uint64(hash))
}

// NewException returns an exception of the named JDK class (see
// javaio.JDK) with a message and no stack trace.
func NewException(class, msg string) *javaio.Object {
	return javaio.NewObject(javaio.JDK().Class(class)).Set("detailMessage", msg)
}
