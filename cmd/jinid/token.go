//go:build !jinid_omit_tools

package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/jinid/jinid/services/api/client"
)

func newTokenCmd() *spec {
	var api apiFlags
	cmd := &spec{
		use:   "token",
		short: "Create, list and revoke the API's bearer tokens (an administrator's)",
		long: `The network API asks for a bearer token (Authorization: Bearer ...) for
anything beyond what anonymous callers may do (the daemon's --anonymous,
read by default). A token has one scope:

  read    queries, listings, discovery state
  client  also registering services, leases, and lookup discovery,
          renewal and mailbox registrations, and managing one's own
  admin   also the daemon itself: its lookup service's groups and
          locators, and tokens

These commands need an administrator: run them on the daemon's host, where
they use the local socket (no token: its file permissions decide), or
give an admin token (--token-file, or $JINID_TOKEN). On its first start
the daemon writes one admin token to admin.token in its data directory.

A token's secret is shown once, when it is made; the daemon keeps only a
hash. Revoking a token refuses it at once.`,
		example: `  jinid token create --name build-bot --scope client --expires 720h > bot.token
  jinid token list
  JINID_TOKEN=$(cat bot.token) jinid lookup register --server http://gw:4162 --type com.example.Thing
  jinid token revoke build-bot`,
	}
	api.add(cmd)
	cmd.AddCommand(tokenCreateCmd(&api), tokenListCmd(&api), tokenRevokeCmd(&api))
	return cmd
}

func tokenCreateCmd(api *apiFlags) *spec {
	var name, scope string
	var expires time.Duration
	create := withOutput(&spec{
		use:   "create --name NAME --scope read|client|admin [--expires D]",
		short: "Make a token; prints its secret, shown this once",
	}, func(inv *invocation, p *printer, _ []string) error {
		if name == "" {
			return usagef("--name is required (it names the token in listings and in the audit log)")
		}
		if expires < 0 {
			return usagef("--expires %s: want a positive duration, or 0 for a token that works until revoked", expires)
		}
		c, err := api.connect()
		if err != nil {
			return err
		}
		tok, err := c.CreateToken(inv.ctx, name, scope, expires)
		if err != nil {
			return err
		}
		if err := p.bare(record{{"secret", tok.Secret}, {"name", tok.Name}, {"scope", tok.Scope}, {"id", tok.ID}}); err != nil {
			return err
		}
		fmt.Fprintf(inv.stderr, "token %q (%s, id %s) made; its secret is shown only now\n", tok.Name, tok.Scope, tok.ID)
		return nil
	})
	create.Flags().StringVar(&name, "name", "", "what the token is called (letters, digits, . _ -)")
	create.Flags().StringVar(&scope, "scope", "client", "what it allows: read, client or admin")
	create.Flags().DurationVar(&expires, "expires", 0, "how long it works (e.g. 720h; 0: until revoked)")
	return create
}

func tokenListCmd(api *apiFlags) *spec {
	list := withOutput(&spec{
		use:   "list",
		short: "List the tokens (never their secrets)",
	}, func(inv *invocation, p *printer, _ []string) error {
		c, err := api.connect()
		if err != nil {
			return err
		}
		toks, err := c.Tokens(inv.ctx)
		if err != nil {
			return err
		}
		rs := make([]record, len(toks))
		for i, t := range toks {
			rs[i] = tokenRecord(t)
		}
		return p.list("tokens", rs, tokenRecord(client.Token{}))
	})
	return list
}

func tokenRevokeCmd(api *apiFlags) *spec {
	revoke := &spec{
		use:   "revoke NAME|ID...",
		short: "Revoke tokens: refused from now on",
		args:  minArgs(1),
		run: func(inv *invocation, args []string) error {
			c, err := api.connect()
			if err != nil {
				return err
			}
			var errs []error
			for _, a := range args {
				if err := c.RevokeToken(inv.ctx, a); err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", a, err))
					continue
				}
				if err := done(inv, "token %s revoked", a); err != nil {
					return err
				}
			}
			return errors.Join(errs...)
		},
	}
	return revoke
}

// tokenRecord is a token as token list prints it: expires null (JSON) or
// "-" (table) when it works until revoked.
func tokenRecord(t client.Token) record {
	return record{{"name", t.Name}, {"scope", t.Scope}, {"id", t.ID}, {"created", instant(t.Created)}, {"expires", instant(t.Expires)}}
}
