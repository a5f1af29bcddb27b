// Package jeri speaks Jini Extensible Remote Invocation as the JGDMS
// implementation of Java puts it on TCP: the multiplexing protocol that
// carries up to 256 sessions on one connection (both roles), and the
// invocation framing of BasicObjectEndpoint and BasicInvocationHandler on
// top of it (object identifier, method hash, return or throw).
//
// It knows nothing of the objects it serves: a Dispatcher routes calls by
// object Uuid to whatever implements them. ../shared/design/JERI.md has
// the wire facts this code follows.
package jeri

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// ErrProtocol is wrapped by every error about a peer that broke the
// multiplexing protocol. The connection is closed after it.
var ErrProtocol = errors.New("jeri mux protocol violation")

// The connection header both sides send first: "Jmux", version 1, the
// initial ration of each session (in units of 256 bytes; 0 is
// unlimited), and flags.
var muxMagic = [4]byte{'J', 'm', 'u', 'x'}

const muxVersion = 1

// Message types, the first byte of a message header.
const (
	opNoOperation = 0x00
	opShutdown    = 0x02
	opPing        = 0x04
	opPingAck     = 0x06
	opError       = 0x08
	opIncrement   = 0x10 // | shift
	opAbort       = 0x20 // | partial
	opClose       = 0x30
	opAck         = 0x40
	opData        = 0x80 // | flags

	dataOpen        = 0x10
	dataClose       = 0x08
	dataEOF         = 0x04
	dataAckRequired = 0x02
)

// fragment is the most data jinid puts in one Data message; Java sends
// 1024.
const fragment = 8192

// header is a connection header.
type header struct {
	version byte
	ration  int64 // bytes; 0 is unlimited
	flags   byte
}

func readHeader(r io.Reader) (header, error) {
	var b [8]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return header{}, fmt.Errorf("reading mux connection header: %w", err)
	}
	if [4]byte(b[:4]) != muxMagic {
		return header{}, fmt.Errorf("%w: connection header %x is not Jmux", ErrProtocol, b[:4])
	}
	if b[4] < 1 {
		return header{}, fmt.Errorf("%w: mux version %d", ErrProtocol, b[4])
	}
	return header{version: b[4], ration: int64(binary.BigEndian.Uint16(b[5:7])) << 8, flags: b[7]}, nil
}

func appendHeader(dst []byte, ration int64) []byte {
	dst = append(dst, muxMagic[:]...)
	dst = append(dst, muxVersion)
	dst = binary.BigEndian.AppendUint16(dst, uint16(ration>>8))
	return append(dst, 0)
}

// message is one mux message as read: its header and, for the types that
// have one, its body.
type message struct {
	op      byte
	session byte
	// n is the header's last two bytes: a body length, a ration
	// increment or a ping cookie.
	n    uint16
	body []byte
}

// hasBody reports whether a message of type op carries n bytes after its
// header.
func hasBody(op byte) bool {
	switch {
	case op&0x80 != 0, op&0xF0 == opAbort:
		return true
	}
	switch op {
	case opNoOperation, opShutdown, opError:
		return true
	}
	return false
}

// readMessage reads the next message into buf (reused between calls).
func readMessage(r io.Reader, buf []byte) (message, []byte, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return message{}, buf, err
	}
	m := message{op: h[0], session: h[1], n: binary.BigEndian.Uint16(h[2:])}
	if !hasBody(m.op) {
		return m, buf, nil
	}
	if cap(buf) < int(m.n) {
		buf = make([]byte, m.n)
	}
	m.body = buf[:m.n]
	if _, err := io.ReadFull(r, m.body); err != nil {
		return message{}, buf, fmt.Errorf("%w: message 0x%02x cut short: %w", ErrProtocol, m.op, err)
	}
	return m, buf, nil
}

func appendMessage(dst []byte, op, session byte, n uint16, body []byte) []byte {
	dst = append(dst, op, session)
	dst = binary.BigEndian.AppendUint16(dst, n)
	return append(dst, body...)
}

// increment returns the ration a client grants with an IncrementRation
// message.
func increment(m message) int64 { return int64(m.n) << (m.op & 0x0E) }

// appendIncrement appends IncrementRation messages granting n bytes.
func appendIncrement(dst []byte, session byte, n int64) []byte {
	for n > 0 {
		shift := byte(0)
		for n>>shift > 0xFFFF && shift < 14 {
			shift += 2
		}
		v := min(n>>shift, 0xFFFF)
		dst = appendMessage(dst, opIncrement|shift, session, uint16(v), nil)
		n -= v << shift
	}
	return dst
}

// Frame is one mux message as a capture shows it.
type Frame struct {
	// Offset is where the message starts in the stream.
	Offset  int
	Op      byte
	Session byte
	// N is the header's last two bytes: a length, an increment or a
	// cookie.
	N    uint16
	Body []byte
}

// Data and its flags, for readers of Frames.
func (f Frame) Data() bool  { return f.Op&0x80 != 0 }
func (f Frame) Open() bool  { return f.Data() && f.Op&dataOpen != 0 }
func (f Frame) EOF() bool   { return f.Data() && f.Op&dataEOF != 0 }
func (f Frame) Close() bool { return f.Data() && f.Op&dataClose != 0 || f.Op == opClose }

// Name names the message type.
func (f Frame) Name() string {
	switch {
	case f.Data():
		return "Data"
	case f.Op&0xF0 == opIncrement:
		return "IncrementRation"
	case f.Op&0xFE == opAbort:
		return "Abort"
	}
	switch f.Op {
	case opNoOperation:
		return "NoOperation"
	case opShutdown:
		return "Shutdown"
	case opPing:
		return "Ping"
	case opPingAck:
		return "PingAck"
	case opError:
		return "Error"
	case opClose:
		return "Close"
	case opAck:
		return "Acknowledgment"
	}
	return fmt.Sprintf("0x%02x", f.Op)
}

// IsMux reports whether a TCP stream starts with the mux connection
// header.
func IsMux(stream []byte) bool { return len(stream) >= 4 && [4]byte(stream[:4]) == muxMagic }

// NextFrame parses the message at the start of b, which follows the
// connection header: the message and its length, or ok false while b
// holds only part of one.
func NextFrame(b []byte) (f Frame, n int, ok bool) {
	if len(b) < 4 {
		return Frame{}, 0, false
	}
	f = Frame{Op: b[0], Session: b[1], N: binary.BigEndian.Uint16(b[2:4])}
	n = 4
	if hasBody(f.Op) {
		n += int(f.N)
		if len(b) < n {
			return Frame{}, 0, false
		}
		f.Body = b[4:n]
	}
	return f, n, true
}

// HeaderLen is the length of the connection header.
const HeaderLen = 8

// Frames parses one direction of a captured mux connection: its header's
// ration and its messages, up to the first that is cut short (err says
// so).
func Frames(stream []byte) (ration int64, frames []Frame, err error) {
	r := bytes.NewReader(stream)
	h, err := readHeader(r)
	if err != nil {
		return 0, nil, err
	}
	for r.Len() > 0 {
		off := len(stream) - r.Len()
		m, _, err := readMessage(r, nil)
		if err != nil {
			return h.ration, frames, fmt.Errorf("at byte %d: %w", off, err)
		}
		frames = append(frames, Frame{Offset: off, Op: m.op, Session: m.session, N: m.n, Body: m.body})
	}
	return h.ration, frames, nil
}
