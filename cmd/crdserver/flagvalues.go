package main

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/crdserver/crdserver/internal/server"
)

// Flag values whose String is what they hold, so that usage shows their
// defaults and /flagz their values (a flag.Func's String is empty).

// neverDuration is a duration flag whose 0 turns the limit off:
// server.Config spells "off" as -1, since its own zero means "default".
type neverDuration struct{ d *time.Duration }

func (n neverDuration) String() string {
	switch {
	case n.d == nil: // the flag package's zero value, for usage
		return ""
	case *n.d < 0:
		return "0s"
	}
	return n.d.String()
}

func (n neverDuration) Set(v string) error {
	d, err := time.ParseDuration(v)
	switch {
	case err != nil:
		return err
	case d < 0:
		return errors.New("must not be negative")
	case d == 0:
		d = -1
	}
	*n.d = d
	return nil
}

// enabledFlag is a boolean flag, true by default, that sets a Config's
// Disable field to its opposite.
type enabledFlag struct{ disabled *bool }

func (f enabledFlag) String() string {
	return strconv.FormatBool(f.disabled != nil && !*f.disabled)
}

func (f enabledFlag) Set(v string) error {
	on, err := strconv.ParseBool(v)
	if err != nil {
		return err
	}
	*f.disabled = !on
	return nil
}

func (enabledFlag) IsBoolFlag() bool { return true }

// gates is --feature-gates: upstream's name=bool pairs, of which crdserver
// reads APIResponseCompression into cfg. A gate crdserver does not know
// is an error, as upstream's flag refuses one it does not know. String
// gives the gates set, sorted, as upstream's flag shows them.
type gates struct {
	cfg *server.Config
	set map[string]bool
}

func featureGates(cfg *server.Config) *gates { return &gates{cfg: cfg} }

func (g *gates) String() string {
	if g == nil || len(g.set) == 0 {
		return ""
	}
	pairs := make([]string, 0, len(g.set))
	for _, name := range slices.Sorted(maps.Keys(g.set)) {
		pairs = append(pairs, name+"="+strconv.FormatBool(g.set[name]))
	}
	return strings.Join(pairs, ",")
}

func (g *gates) Set(v string) error {
	for pair := range strings.SplitSeq(v, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok {
			return fmt.Errorf("missing bool value for %s", name)
		}
		on, err := strconv.ParseBool(strings.TrimSpace(value))
		if err != nil {
			return fmt.Errorf("invalid value of %s=%s, err: %w", name, value, err)
		}
		switch name = strings.TrimSpace(name); name {
		case "APIResponseCompression":
			g.cfg.DisableResponseCompression = !on
		default:
			return fmt.Errorf("unrecognized feature gate: %s", name)
		}
		if g.set == nil {
			g.set = map[string]bool{}
		}
		g.set[name] = on
	}
	return nil
}
