package unicast

import (
	"slices"

	"github.com/jinid/jinid/discovery"
)

// NewLookupService describes the lookup service that gave resp. Its
// ServiceID is the one its registrar proxy carries (Reggie's and
// jinid's proxies carry it); for a proxy of a class jinid cannot read,
// announced is the ServiceID an announcement gave, if any, and failing
// that a stand-in (StandInID).
func NewLookupService(resp *Response, announced discovery.ServiceID) discovery.LookupService {
	ls := discovery.LookupService{Host: resp.Host, Port: resp.Port, Groups: slices.Clone(resp.Groups),
		Version: resp.Version, Registrar: resp.Registrar}
	if ls.Groups == nil {
		ls.Groups = []string{}
	}
	switch r := resp.Registrar; {
	case r.Descriptor != nil && !r.Descriptor.ServiceID.IsZero():
		ls.ID = r.Descriptor.ServiceID
	case !r.ServiceID.IsZero():
		ls.ID = r.ServiceID
	default:
		ls.StandIn = StandInID(r.Marshalled)
		ls.ID = announced
		if ls.ID.IsZero() {
			ls.ID = ls.StandIn
		}
	}
	return ls
}
