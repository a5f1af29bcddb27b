package access

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jinid/jinid/internal/clock"
	"github.com/jinid/jinid/internal/lifecycle"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/fault"
	"github.com/jinid/jinid/services/store"
)

// MaxTokens caps the tokens a daemon keeps.
const MaxTokens = 1000

const (
	bucket       = "tokens"
	bootstrapKey = "\x00bootstrapped" // sorts before every token ID
	// prefix starts every token, so one in a log or a config is
	// recognisable (and scanners can find leaked ones).
	prefix = "jinid_"
)

// Token is a token as listed: never its secret.
type Token = apitypes.Token

// record is a token as stored: its secret only as a SHA-256 hash (the
// secret is 256 random bits, so a fast hash is enough).
type record struct {
	Token
	Hash string `json:"hash"`
}

// TokensConfig configures Tokens.
type TokensConfig struct {
	Store  *store.Store
	Clock  clock.Clock
	Logger *slog.Logger
	// BootstrapFile is where the first admin token is written, once, on
	// the first start (0600); "" writes none.
	BootstrapFile string
}

// Tokens is the daemon's bearer tokens: created, listed and revoked by an
// administrator, checked on every request over the network.
type Tokens struct {
	cfg TokensConfig
	log *slog.Logger

	mu   sync.RWMutex
	byID map[string]record
}

// TokensBucket is the store bucket the tokens are kept in (a node of a
// cluster that does not hold the store follows a copy of it).
const TokensBucket = bucket

// NewFollowingTokens returns tokens that keep nothing of their own: a
// copy of another daemon's, fed by Follow, that the guard checks
// requests against (a node of a cluster that does not hold the store).
// Create and Revoke are the other daemon's to do.
func NewFollowingTokens(clk clock.Clock, log *slog.Logger) *Tokens {
	if clk == nil {
		clk = clock.Real{}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Tokens{cfg: TokensConfig{Clock: clk, Logger: log}, log: log.With("component", "access"), byID: map[string]record{}}
}

// Follow applies a batch of changes of TokensBucket, in commit order,
// to a copy (NewFollowingTokens; a reset: they are the whole content). A
// record that does not read is left out, and logged; nothing is refused.
func (t *Tokens) Follow(b store.Batch) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if b.Reset {
		clear(t.byID)
	}
	for _, c := range b.Changes {
		if c.Bucket != bucket || c.Key == bootstrapKey {
			continue
		}
		if c.Value == nil {
			delete(t.byID, c.Key)
			continue
		}
		var r record
		if err := json.Unmarshal(c.Value, &r); err != nil || r.ID != c.Key {
			t.log.Warn("a token in the store does not read: left out of the copy", "token", fault.Short(c.Key))
			continue
		}
		t.byID[r.ID] = r
	}
	return nil
}

// NewTokens loads the tokens.
func NewTokens(cfg TokensConfig) (*Tokens, error) {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	t := &Tokens{cfg: cfg, log: cfg.Logger.With("component", "access"), byID: map[string]record{}}
	err := cfg.Store.View(func(tx *store.Tx) error {
		return tx.ForEach(bucket, func(key string, raw []byte) error {
			if key == bootstrapKey {
				return nil
			}
			var r record
			if err := json.Unmarshal(raw, &r); err != nil {
				return fmt.Errorf("token %s: %w", key, err)
			}
			t.byID[r.ID] = r
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("loading tokens: %w", err)
	}
	return t, nil
}

// Start makes the first administrator token, on the first start only: it
// is written to the bootstrap file, whose path is logged. Later starts
// make none, whatever was revoked since.
func (t *Tokens) Start(context.Context) error {
	if t.cfg.BootstrapFile == "" {
		return nil
	}
	var done bool
	if err := t.cfg.Store.View(func(tx *store.Tx) error {
		var err error
		done, err = tx.Get(bucket, bootstrapKey, new(bool))
		return err
	}); err != nil {
		return err
	}
	if done {
		return nil
	}
	secret, tok, err := t.create("admin", ScopeAdmin, 0, func(tx *store.Tx) error { return tx.Put(bucket, bootstrapKey, true) })
	if err != nil {
		return fmt.Errorf("making the first admin token: %w", err)
	}
	if err := writeSecret(t.cfg.BootstrapFile, secret); err != nil {
		// The token exists but nobody can have it: revoke it so that a
		// token nobody knows does not linger.
		_ = t.Revoke(tok.ID)
		return fmt.Errorf("writing the first admin token: %w", err)
	}
	t.log.Info("first start: an admin token was written; use it to create others (jinid token create --help)", "file", t.cfg.BootstrapFile)
	return nil
}

// Shutdown implements lifecycle.Service.
func (t *Tokens) Shutdown(context.Context) error { return nil }

var _ lifecycle.Service = (*Tokens)(nil)

func writeSecret(path, secret string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(secret + "\n")
	return errors.Join(err, f.Chmod(0o600), f.Sync(), f.Close())
}

// validName reports whether name is 1 to 64 letters, digits, '.', '_'
// or '-', starting with a letter or digit. (A loop, not a regular
// expression: the regexp packages are 0.18 MB of the mips daemon, and
// this was their one use there.)
func validName(name string) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for i := range len(name) {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// Create makes a token and returns its secret, the only time it is shown.
// expires is when it stops working (the zero time: never).
func (t *Tokens) Create(name string, scope Scope, expires time.Time) (string, Token, error) {
	var exp int64
	if !expires.IsZero() {
		exp = expires.UnixMilli()
		if !expires.After(t.cfg.Clock.Now()) {
			return "", Token{}, fault.New(apitypes.InvalidArgument, "token %q would expire before it is made", name)
		}
	}
	return t.create(name, scope, exp, nil)
}

func (t *Tokens) create(name string, scope Scope, expires int64, also func(*store.Tx) error) (string, Token, error) {
	if !validName(name) {
		return "", Token{}, fault.New(apitypes.InvalidArgument, "token name %q: want 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	if _, err := ParseScope(string(scope)); err != nil {
		return "", Token{}, err
	}
	var raw [8 + 32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", Token{}, err
	}
	id := hex.EncodeToString(raw[:8])
	secretPart := base64.RawURLEncoding.EncodeToString(raw[8:])
	r := record{Token: Token{ID: id, Name: name, Scope: string(scope), Created: t.cfg.Clock.Now().UnixMilli(), Expires: expires},
		Hash: hash(secretPart)}
	err := t.cfg.Store.Update(func(tx *store.Tx) error {
		t.mu.RLock()
		n := len(t.byID)
		taken := slices.ContainsFunc(slices.Collect(maps.Values(t.byID)), func(o record) bool { return o.Name == name })
		t.mu.RUnlock()
		switch {
		case taken:
			return fault.New(apitypes.InvalidArgument, "a token named %q exists; revoke it first or choose another name", name)
		case n >= MaxTokens:
			return fault.New(apitypes.LeaseDenied, "%d tokens exist, the most a daemon keeps; revoke some first", n)
		}
		if err := tx.Put(bucket, id, r); err != nil {
			return err
		}
		if also != nil {
			if err := also(tx); err != nil {
				return err
			}
		}
		tx.OnCommit(func() {
			t.mu.Lock()
			t.byID[id] = r
			t.mu.Unlock()
		})
		return nil
	})
	if err != nil {
		return "", Token{}, err
	}
	return prefix + id + "_" + secretPart, r.Token, nil
}

func hash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// List returns the tokens, by name.
func (t *Tokens) List() []Token {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]Token, 0, len(t.byID))
	for _, r := range t.byID {
		out = append(out, r.Token)
	}
	// sort.Slice: one sort shared by every element type (docs/performance.md, "Router builds").
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Revoke deletes a token, by ID or name; it is refused from now on.
func (t *Tokens) Revoke(idOrName string) error {
	t.mu.RLock()
	var id string
	for _, r := range t.byID {
		if r.ID == idOrName || r.Name == idOrName {
			id = r.ID
		}
	}
	t.mu.RUnlock()
	if id == "" {
		return fault.New(apitypes.NoSuchObject, "no token %q", idOrName)
	}
	return t.cfg.Store.Update(func(tx *store.Tx) error {
		if err := tx.Delete(bucket, id); err != nil {
			return err
		}
		tx.OnCommit(func() {
			t.mu.Lock()
			delete(t.byID, id)
			t.mu.Unlock()
		})
		return nil
	})
}

// errBadToken is every failure to verify a token: the caller learns no
// more than "not a valid token" (which part was wrong is nobody's
// business).
var errBadToken = fault.New(apitypes.Unauthenticated, "the bearer token is not valid (unknown, revoked or expired)")

// verify returns the token a bearer secret is.
func (t *Tokens) verify(bearer string) (Token, error) {
	rest, ok := strings.CutPrefix(bearer, prefix)
	if !ok {
		return Token{}, errBadToken
	}
	id, secret, ok := strings.Cut(rest, "_")
	if !ok {
		return Token{}, errBadToken
	}
	t.mu.RLock()
	r, found := t.byID[id]
	t.mu.RUnlock()
	// Compare a hash either way, so a wrong ID costs what a wrong secret
	// does.
	want := r.Hash
	if !found {
		want = strings.Repeat("0", sha256.Size*2)
	}
	if subtle.ConstantTimeCompare([]byte(hash(secret)), []byte(want)) != 1 || !found {
		return Token{}, errBadToken
	}
	if r.Expires != 0 && t.cfg.Clock.Now().UnixMilli() >= r.Expires {
		return Token{}, errBadToken
	}
	return r.Token, nil
}
