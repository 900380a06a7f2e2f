package etcd

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// memberProbeTimeout bounds one member's probe. A member that answers no
// linearizable read within it is frozen, cut off from the others, or too
// slow to be worth a request: it is taken out at its first failed probe,
// since its requests hang meanwhile, and a member that lets a read wait a
// second while another answers it is not worth sending requests to.
const memberProbeTimeout = time.Second

// members keeps the shared client's endpoints to the members that serve.
//
// The etcd client spreads requests over every endpoint (gRPC round robin)
// and drops a connection only when gRPC keepalive gives up on it: a member
// that keeps its sockets open but answers nothing (stopped, or cut off
// from its peers so that it has no leader to serve a linearizable read)
// receives its share of requests for as long as keepalive allows, and each
// of them hangs until its deadline. So members probes every member on a
// connection of its own with a linearizable read, and sets the client's
// endpoints to those that answered: new requests go to the members that
// serve, while those already sent to the others wait out their attempt's
// bound (see gatedKV). A member that answers again is taken back at once.
//
// When no member answers (etcd lost, or an election under way) the client
// keeps every endpoint: there is nothing better to send requests to, and
// the gate decides whether to fail them.
type members struct {
	log     *slog.Logger
	set     func(endpoints ...string) // the shared client's SetEndpoints
	all     []string
	probes  []func(context.Context) error // one per endpoint in all
	closers []func() error                // of the probes' clients
	// ejected is called after a member was taken out of the client's
	// endpoints: watches already streaming from it keep their stream and
	// must be restarted.
	ejected func()

	mu    sync.Mutex // guards using; probe runs one at a time
	using []string   // the client's endpoints, in the order of all
}

// newMembers builds the probes: a single-endpoint client per member,
// configured as the shared one.
func newMembers(log *slog.Logger, client *clientv3.Client, cfg clientv3.Config, ejected func()) (*members, error) {
	m := &members{log: log, set: client.SetEndpoints, all: cfg.Endpoints, ejected: ejected, using: cfg.Endpoints}
	for _, ep := range cfg.Endpoints {
		one := cfg
		one.Endpoints = []string{ep}
		c, err := clientv3.New(one)
		if err != nil {
			m.close()
			return nil, err
		}
		m.probes = append(m.probes, func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, memberProbeTimeout)
			defer cancel()
			_, err := c.Get(ctx, probeKey, clientv3.WithCountOnly())
			return err
		})
		m.closers = append(m.closers, c.Close)
	}
	return m, nil
}

// probe probes every member at once and updates the client's endpoints.
// It returns nil when some member answered, else the first error.
func (m *members) probe(ctx context.Context) error {
	errs := make([]error, len(m.all))
	var wg sync.WaitGroup
	for i, p := range m.probes {
		wg.Go(func() { errs[i] = p(ctx) })
	}
	wg.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	use, ejected := m.choose(errs)
	if !slices.Equal(use, m.using) {
		m.log.Warn("etcd: sending requests to the members that serve", "endpoints", use, "before", m.using)
		m.set(use...)
		m.using = use
		if ejected {
			m.ejected()
		}
	}
	for _, err := range errs {
		if err == nil {
			return nil
		}
	}
	return errors.Join(errs...)
}

// choose returns the endpoints the client should use after probes that
// ended with errs, in the order of all, and whether that takes any away
// from those it uses now.
func (m *members) choose(errs []error) (use []string, ejected bool) {
	for i, ep := range m.all {
		if errs[i] == nil {
			use = append(use, ep)
		}
	}
	if len(use) == 0 {
		use = m.all
	}
	for _, ep := range m.using {
		if !slices.Contains(use, ep) {
			ejected = true
		}
	}
	return use, ejected
}

// close closes the probes' connections.
func (m *members) close() {
	for _, c := range m.closers {
		c()
	}
}
