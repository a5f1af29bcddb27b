// Package lifecycle is the one contract of jinid's long-lived components,
// as AdGuardHome's aghos.Service is: each starts with a context and shuts
// down waiting for everything it started. A Group starts components in
// order and shuts them down in reverse; the composition root is one.
package lifecycle

import (
	"context"
	"errors"
	"fmt"
)

// Service is a long-lived component.
type Service interface {
	// Start begins its work; ctx bounds the starting, not the work.
	Start(ctx context.Context) error
	// Shutdown stops it and waits for the goroutines it started (giving
	// up waiting when ctx ends). Shutting down one not started, or
	// twice, is harmless.
	Shutdown(ctx context.Context) error
}

// Funcs makes a Service of two functions, for a part with no type of its
// own (a listener, a store to close); a nil function does nothing.
type Funcs struct {
	StartFunc, ShutdownFunc func(context.Context) error
}

// Start implements Service.
func (f Funcs) Start(ctx context.Context) error {
	if f.StartFunc == nil {
		return nil
	}
	return f.StartFunc(ctx)
}

// Shutdown implements Service.
func (f Funcs) Shutdown(ctx context.Context) error {
	if f.ShutdownFunc == nil {
		return nil
	}
	return f.ShutdownFunc(ctx)
}

// Group is an ordered list of named services: started in order, shut
// down in reverse. A member is added when it is made, so Shutdown reaches
// every one, started or not: one made but not started may hold resources
// (a listener, a netlink socket), and shutting down one that never
// started is harmless by contract.
type Group struct {
	members []member
	started int // members started so far: the next Start begins there
}

type member struct {
	name string
	svc  Service
}

// Add appends a service; name says what it is in errors.
func (g *Group) Add(name string, s Service) { g.members = append(g.members, member{name, s}) }

// Start starts the services not yet started, in order. If one fails,
// every member is shut down, in reverse, and the error names the one that
// failed.
func (g *Group) Start(ctx context.Context) error {
	for i := g.started; i < len(g.members); i++ {
		m := g.members[i]
		if err := m.svc.Start(ctx); err != nil {
			err = fmt.Errorf("starting %s: %w", m.name, err)
			return errors.Join(err, g.Shutdown(ctx))
		}
		g.started = i + 1
	}
	return nil
}

// Shutdown shuts every member down in reverse order, whatever the others
// answer, and returns their errors together. The group is empty after.
func (g *Group) Shutdown(ctx context.Context) error {
	var errs []error
	for i := len(g.members) - 1; i >= 0; i-- {
		m := g.members[i]
		if err := m.svc.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("shutting down %s: %w", m.name, err))
		}
	}
	g.members, g.started = nil, 0
	return errors.Join(errs...)
}

var _ Service = (*Group)(nil)
