//go:build jinid_omit_etcd

package app

import (
	"context"
	"errors"
	"net"

	"github.com/jinid/jinid/discovery/group"
	"github.com/jinid/jinid/services/store"
)

// standby is nothing in a build without etcd: there is no other node to
// stand for (standby.go).
type standby struct{}

func (d *Daemon) startStandby(context.Context, net.Listener) (*standby, error) {
	return nil, errors.New("this jinid is built without etcd")
}

func (s *standby) setHolder(store.Member) {}

func (s *standby) stop() net.Listener { return nil }

// addHeardRelay does nothing: there are no other nodes (heard.go).
func (d *Daemon) addHeardRelay(*store.Store, *group.Multicast) {}

// acceptForwarded is ln: no node forwards to this one.
func (d *Daemon) acceptForwarded(ln net.Listener) net.Listener { return ln }
