package unicast

import (
	"crypto/sha256"
	"slices"

	"github.com/jinid/jinid/discovery"
)

// NewLookupService describes the lookup service that gave resp. id is
// the discovery.ServiceID an announcement gave, if any; a jinid registrar's
// descriptor gives its own.
func NewLookupService(resp *Response, id discovery.ServiceID) discovery.LookupService {
	ls := discovery.LookupService{ID: id, Host: resp.Host, Port: resp.Port, Groups: slices.Clone(resp.Groups),
		Version: resp.Version, Registrar: resp.Registrar}
	if ls.Groups == nil {
		ls.Groups = []string{}
	}
	if d := resp.Registrar.Descriptor; d != nil && !d.ServiceID.IsZero() {
		ls.ID = d.ServiceID
	}
	if ls.ID.IsZero() {
		sum := sha256.Sum256(resp.Registrar.Marshalled)
		copy(ls.ID[:], sum[:])
		ls.IDFromProxy = true
	}
	return ls
}
