// Package jinid is the root of the jinid module. It holds no code; its
// tests pin the layering of the tree (docs/architecture.md):
//
//	cmd/jinid     the CLI, the composition root and the one-shot tools
//	announce      our lookup service's presence on the wire
//	services      everything behind the client API: the shared core, the
//	              lookup service, the helper services and the API assembly
//	discovery     the Jini discovery protocols: model, codecs, engines
//	internal      ground-level helpers, importing nothing of jinid above
//
// A package may import packages of its own top-level folder and of those
// listed below it, never above.
package jinid
