package javalookup

import (
	"github.com/jinid/jinid/java/javaio"
	"github.com/jinid/jinid/services/lookup"
)

// Own has the item of serviceID, a service jinid itself serves to Java
// (the lease renewal service, ...), carry the service object proxy
// makes for the host a client reached jinid on: its Jini ERI endpoint
// is jinid's there, as the registrar proxy's is. The item itself is in
// the registry like any other (HTTP clients see it); Java sees this
// object for its service.
func (s *Service) Own(serviceID string, proxy func(host string) ([]byte, error)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.own == nil {
		s.own = make(map[string]func(string) ([]byte, error))
	}
	s.own[serviceID] = proxy
}

// forHost gives the items of jinid's own services the service object
// made for host (Own); the others are left as they are.
func (s *Service) forHost(items []lookup.Item, host string) ([]lookup.Item, error) {
	s.mu.Lock()
	own := s.own
	s.mu.Unlock()
	if len(own) == 0 {
		return items, nil
	}
	var out []lookup.Item
	for i, it := range items {
		proxy := own[it.ServiceID]
		if proxy == nil {
			continue
		}
		obj, err := proxy(host)
		if err != nil {
			return nil, err
		}
		w, err := javaio.Encode(s.Wrap(obj), false)
		if err != nil {
			return nil, err
		}
		if out == nil {
			out = append([]lookup.Item(nil), items...)
		}
		out[i].Java = &lookup.JavaItem{Service: w}
	}
	if out == nil {
		return items, nil
	}
	return out, nil
}
