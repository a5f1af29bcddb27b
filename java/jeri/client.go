package jeri

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// DefaultMaxReply bounds a reply jinid reads as a client: listeners
// answer remote events with a few bytes.
const DefaultMaxReply = 64 << 10

// ClientConn is the client side of one mux connection. Calls on it run
// one at a time, each on a session of its own.
type ClientConn struct {
	c        net.Conn
	r        *bufio.Reader
	maxReply int

	mu      sync.Mutex
	initial int64 // the server's ration per session; 0 is unlimited
	next    byte
	broken  error
}

// NewClientConn exchanges connection headers on c, within ctx.
// LocalAddr is the address the connection leaves this host from: the
// one the object's host reaches this one at.
func (c *ClientConn) LocalAddr() net.Addr { return c.c.LocalAddr() }

func NewClientConn(ctx context.Context, c net.Conn) (*ClientConn, error) {
	cc := &ClientConn{c: c, r: bufio.NewReaderSize(c, 4096), maxReply: DefaultMaxReply}
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := c.Write(appendHeader(nil, 0)); err != nil {
		return nil, fmt.Errorf("sending mux header: %w", err)
	}
	h, err := readHeader(cc.r)
	if err != nil {
		return nil, err
	}
	cc.initial = h.ration
	return cc, nil
}

// SetMaxReply bounds the replies read on the connection (DefaultMaxReply
// unless set): a lookup's matches need more than an event's answer.
func (cc *ClientConn) SetMaxReply(n int) {
	cc.mu.Lock()
	cc.maxReply = n
	cc.mu.Unlock()
}

// Close closes the connection.
func (cc *ClientConn) Close() error { return cc.c.Close() }

// Broken reports whether the connection can no longer be used.
func (cc *ClientConn) Broken() bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.broken != nil
}

// Call sends one request and returns the reply, within ctx. An error
// leaves the connection broken (Broken reports true): a call that failed
// half way leaves the session's state unknown.
func (cc *ClientConn) Call(ctx context.Context, req []byte) ([]byte, error) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.broken != nil {
		return nil, cc.broken
	}
	stop := context.AfterFunc(ctx, func() { cc.c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if d, ok := ctx.Deadline(); ok {
		cc.c.SetDeadline(d)
	} else {
		cc.c.SetDeadline(time.Time{})
	}
	reply, err := cc.call(req)
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
		cc.broken = err
		cc.c.Close()
	}
	return reply, err
}

func (cc *ClientConn) call(req []byte) ([]byte, error) {
	s := cc.next
	cc.next++
	ration := cc.initial
	var out []byte
	var buf []byte
	first := true
	for first || len(req) > 0 {
		if cc.initial > 0 && ration <= 0 {
			// Wait for the server to grant more, answering what else
			// comes meanwhile.
			m, b, err := readMessage(cc.r, buf)
			buf = b
			if err != nil {
				return nil, err
			}
			if _, err := cc.control(m, s, &ration, nil); err != nil {
				return nil, err
			}
			continue
		}
		n := min(len(req), fragment)
		if cc.initial > 0 {
			n = int(min(int64(n), ration))
			ration -= int64(n)
		}
		op := byte(opData)
		if first {
			op |= dataOpen
		}
		if n == len(req) {
			op |= dataEOF
		}
		out = appendMessage(out[:0], op, s, uint16(n), req[:n])
		if _, err := cc.c.Write(out); err != nil {
			return nil, err
		}
		req, first = req[n:], false
	}
	var reply []byte
	for {
		m, b, err := readMessage(cc.r, buf)
		buf = b
		if err != nil {
			return nil, err
		}
		done, err := cc.control(m, s, &ration, &reply)
		if err != nil {
			return nil, err
		}
		if done {
			return reply, nil
		}
	}
}

// control handles one message from the server during a call on session
// s, appending reply data to *reply (nil while still sending). It
// reports whether the reply is complete.
func (cc *ClientConn) control(m message, s byte, ration *int64, reply *[]byte) (bool, error) {
	switch {
	case m.op&0x80 != 0:
		if m.session != s || reply == nil {
			return false, fmt.Errorf("%w: data on session %d", ErrProtocol, m.session)
		}
		if len(*reply)+len(m.body) > cc.maxReply {
			return false, fmt.Errorf("%w: reply larger than %d bytes", ErrProtocol, cc.maxReply)
		}
		*reply = append(*reply, m.body...)
		if m.op&dataAckRequired != 0 {
			if _, err := cc.c.Write(appendMessage(nil, opAck, s, 0, nil)); err != nil {
				return false, err
			}
		}
		return m.op&dataEOF != 0, nil
	case m.op&0xF0 == opIncrement:
		if m.session == s {
			*ration += increment(m)
		}
		return false, nil
	case m.op&0xFE == opAbort:
		return false, fmt.Errorf("server aborted the call: %q", truncate(m.body))
	}
	switch m.op {
	case opNoOperation, opPingAck:
		return false, nil
	case opPing:
		_, err := cc.c.Write(appendMessage(nil, opPingAck, 0, m.n, nil))
		return false, err
	case opClose:
		if m.session == s {
			return false, errors.New("server closed the session without a reply")
		}
		return false, nil
	case opShutdown:
		return false, fmt.Errorf("server shut the connection down: %q", truncate(m.body))
	case opError:
		return false, fmt.Errorf("server reported an error: %q", truncate(m.body))
	}
	return false, fmt.Errorf("%w: message type 0x%02x from a server", ErrProtocol, m.op)
}
