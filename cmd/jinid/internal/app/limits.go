package app

import (
	"fmt"
	"reflect"
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
}

// DefaultLimits are the limits unless configured.
func DefaultLimits() Limits {
	return Limits{
		APIConns: 512, APIConnsPerSource: 64, SocketConns: 128,
		DiscoveryConns: 256, DiscoveryConnsPerSource: 8,
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
	v, t := reflect.ValueOf(l), reflect.TypeOf(l)
	for i := range v.NumField() {
		if v.Field(i).Int() < 0 {
			return fmt.Errorf("limits.%s %d: want a positive number (or 0 for the default, %v)",
				t.Field(i).Tag.Get("json"), v.Field(i).Int(), reflect.ValueOf(DefaultLimits()).Field(i))
		}
	}
	return nil
}
