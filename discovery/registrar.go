package discovery

// Registrar is a lookup service's registrar proxy as discovery carries it.
type Registrar struct {
	// Marshalled is the Java object stream holding the marshalled proxy,
	// exactly as received: a java.rmi.MarshalledObject in version 1, a
	// net.jini.io.MarshalledInstance in version 2.
	Marshalled []byte
	// ServiceID is the lookup service's ServiceID as its proxy carries
	// it: Reggie's RegistrarProxy writes it after its fields (in every
	// lineage of the Java implementation), and jinid's proxy too. Zero
	// when the proxy is of a class jinid does not know; the lookup
	// service then has a stand-in until it announces (see
	// LookupService.StandIn).
	ServiceID ServiceID
	// Descriptor is set when the registrar is a jinid lookup service's.
	Descriptor *Descriptor
	// Proxy, when jinid serves Java clients, is the registrar proxy's own
	// object stream (with the Descriptor inside); it is wrapped in the
	// container of the protocol version when sent.
	Proxy []byte
}

// Descriptor is what a jinid lookup service puts in its proxy slot: the
// facts a client in any language needs to use it.
type Descriptor struct {
	ServiceID ServiceID `json:"serviceID"`
	APIURL    string    `json:"apiURL"`
	Groups    []string  `json:"groups"`
	Locator   string    `json:"locator"`
}

// DescriptorMark starts the string jinid adds to its Java registrar
// proxy's custom data (RegistrarProxy's, after the ServiceID): the
// Descriptor as JSON, for other jinids. Java's readObject reads the
// ServiceID and skips the rest, as ObjectInputStream does with any custom
// data a class does not read.
const DescriptorMark = "jinid-descriptor:"

// IsJinid reports whether the registrar is a jinid lookup service's.
func (r Registrar) IsJinid() bool { return r.Descriptor != nil }
