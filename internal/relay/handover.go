package relay

import (
	"errors"
	"net"
	"sync"
)

// Handover passes the connections a listener accepts to one server at
// a time: a node's door serves them while another node holds the
// store, the daemon's API once this node does. Take gives the next
// server its listener; the one before is closed for Accept (its Close
// then closes nothing more). The last listener taken closes the real
// one.
type Handover struct {
	ln     net.Listener
	mu     sync.Mutex
	cur    *view
	pumped chan struct{} // closed when the accept loop ends
	lnErr  error
	once   sync.Once
}

// NewHandover starts accepting on ln; connections wait for the first
// Take.
func NewHandover(ln net.Listener) *Handover {
	h := &Handover{ln: ln, pumped: make(chan struct{}), cur: newView(nil)}
	h.cur.h = h
	go h.pump()
	return h
}

// Take returns the listener the connections accepted from now on go to,
// closing the one taken before.
func (h *Handover) Take() net.Listener {
	v := newView(h)
	h.mu.Lock()
	old := h.cur
	h.cur = v
	h.mu.Unlock()
	old.end()
	return v
}

func (h *Handover) pump() {
	defer close(h.pumped)
	for {
		c, err := h.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			h.mu.Lock()
			h.lnErr = err
			h.mu.Unlock()
			return
		}
		for delivered := false; !delivered; {
			h.mu.Lock()
			v := h.cur
			h.mu.Unlock()
			select {
			case v.ch <- c:
				delivered = true
			case <-v.done:
				h.mu.Lock()
				last := h.cur == v
				h.mu.Unlock()
				if last {
					// The listener is closing: nobody takes it.
					c.Close()
					delivered = true
				}
			}
		}
	}
}

// view is one server's listener of a Handover.
type view struct {
	h    *Handover
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
}

func newView(h *Handover) *view {
	return &view{h: h, ch: make(chan net.Conn), done: make(chan struct{})}
}

func (v *view) end() { v.once.Do(func() { close(v.done) }) }

func (v *view) Accept() (net.Conn, error) {
	select {
	case c := <-v.ch:
		return c, nil
	case <-v.done:
		return nil, net.ErrClosed
	case <-v.h.pumped:
		v.h.mu.Lock()
		defer v.h.mu.Unlock()
		return nil, v.h.lnErr
	}
}

// Close ends this view; the current one closes the real listener too,
// and waits for its accept loop.
func (v *view) Close() error {
	v.end()
	v.h.mu.Lock()
	last := v.h.cur == v
	v.h.mu.Unlock()
	if !last {
		return nil
	}
	var err error
	v.h.once.Do(func() { err = v.h.ln.Close() })
	<-v.h.pumped
	return err
}

func (v *view) Addr() net.Addr { return v.h.ln.Addr() }
