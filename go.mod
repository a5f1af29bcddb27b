module github.com/jinid/jinid

go 1.26.0

require github.com/google/gopacket v1.1.19

require (
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
