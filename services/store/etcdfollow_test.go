//go:build !jinid_omit_etcd

package store

import (
	"context"
	"errors"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/jinid/jinid/internal/rig/testenv"
)

// A follower's copy: loaded at one revision, then every commit's
// changes to the buckets it follows, in order (a bucket between them
// that it does not follow left out); Wait returns once a commit's
// revision is in the copy, even one that changed no followed bucket;
// etcd confirms the copy current.
func TestEtcdFollow(t *testing.T) {
	endpoint, _ := startEtcd(t)
	cfg := EtcdConfig{Endpoints: []string{endpoint}, Prefix: "/test-follow", Timeout: 2 * time.Second}
	st := openEtcd(t, endpoint, cfg.Prefix)
	put := func(bucket, key string, v any) {
		t.Helper()
		if err := st.Update(func(tx *Tx) error {
			if v == nil {
				return tx.Delete(bucket, key)
			}
			return tx.Put(bucket, key, v)
		}); err != nil {
			t.Fatal(err)
		}
	}
	put("alpha", "a", "1")
	put("beta", "skipped", "x") // between alpha and gamma: not followed
	put("gamma", "g", "2")

	node, err := JoinEtcd(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	var mu sync.Mutex
	copyOf := map[string]string{}
	resets := 0
	f, err := node.Follow(t.Context(), FollowConfig{Buckets: []string{"gamma", "alpha"}, Apply: func(b Batch) error {
		mu.Lock()
		defer mu.Unlock()
		if b.Reset {
			clear(copyOf)
			resets++
		}
		for _, c := range b.Changes {
			if c.Value == nil {
				delete(copyOf, c.Bucket+"/"+c.Key)
			} else {
				copyOf[c.Bucket+"/"+c.Key] = string(c.Value)
			}
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	snapshot := func() map[string]string { mu.Lock(); defer mu.Unlock(); return maps.Clone(copyOf) }
	if got := snapshot(); !maps.Equal(got, map[string]string{"alpha/a": `"1"`, "gamma/g": `"2"`}) || resets != 1 {
		t.Fatalf("loaded: %v (resets %d)", got, resets)
	}

	put("alpha", "b", "3")
	put("gamma", "g", nil)
	put("beta", "other", "y")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := f.Wait(ctx, st.Revision()); err != nil {
		t.Fatalf("waiting for revision %d (the copy at %d): %v", st.Revision(), f.Revision(), err)
	}
	if got := snapshot(); !maps.Equal(got, map[string]string{"alpha/a": `"1"`, "alpha/b": `"3"`}) {
		t.Fatalf("after the changes: %v", got)
	}
	testenv.Until(t, "etcd confirms the copy current", func() bool { return f.Current(time.Second) })
	if resets != 1 {
		t.Errorf("the copy was loaded again %d times", resets-1)
	}
}

// A follower from a revision gets the changes after it alone, each
// with the value before it and its revision; a batch its Apply refuses
// is handed again, nothing skipped.
func TestEtcdFollowFrom(t *testing.T) {
	endpoint, _ := startEtcd(t)
	cfg := EtcdConfig{Endpoints: []string{endpoint}, Prefix: "/test-follow-from", Timeout: 2 * time.Second}
	st := openEtcd(t, endpoint, cfg.Prefix)
	put := func(key string, v any) {
		t.Helper()
		if err := st.Update(func(tx *Tx) error { return tx.Put("items", key, v) }); err != nil {
			t.Fatal(err)
		}
	}
	put("a", "1")
	from := st.Revision()
	put("a", "2")

	node, err := JoinEtcd(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	var mu sync.Mutex
	var got []Change
	refusals := 1
	f, err := node.Follow(t.Context(), FollowConfig{Buckets: []string{"items"}, From: from, Prev: true, Apply: func(b Batch) error {
		mu.Lock()
		defer mu.Unlock()
		if b.Reset {
			t.Errorf("a follower from a revision handed content: %+v", b)
		}
		if refusals > 0 {
			refusals--
			return errors.New("not now")
		}
		got = append(got, b.Changes...)
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	put("b", "3")
	testenv.Until(t, "both changes taken", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == 2 })
	mu.Lock()
	defer mu.Unlock()
	if c := got[0]; c.Key != "a" || string(c.Prev) != `"1"` || string(c.Value) != `"2"` || c.Revision <= from {
		t.Errorf("first change: %+v (from %d)", c, from)
	}
	if c := got[1]; c.Key != "b" || c.Prev != nil || string(c.Value) != `"3"` || c.Revision != st.Revision() {
		t.Errorf("second change: %+v (revision %d)", c, st.Revision())
	}
}
