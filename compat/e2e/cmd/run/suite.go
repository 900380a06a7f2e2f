package main

import (
	"bufio"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync/atomic"
	"time"
)

// suiteRun is one run of the e2e test binary.
type suiteRun struct {
	bin, kubeconfig, kubectl string
	focus, skip              string
	timeout                  time.Duration
	reportDir, logPath       string
	workDir                  string
	verbose                  bool
	// stall is how long the run may go without a spec finishing before the
	// runner interrupts it: some specs poll until their context ends, and
	// against a server that answers otherwise that is forever.
	stall time.Duration
}

// runSuite runs the e2e binary with the framework flags that suit a
// server without nodes: no node or system pod checks, no service account
// wait, a provider that needs no cloud.
//
// When no spec finishes within r.stall, it interrupts the binary as Ctrl-C
// would: Ginkgo then interrupts the running spec, skips the rest and still
// writes its report. stalled says whether that happened.
func runSuite(ctx context.Context, r suiteRun) (stalled bool, err error) {
	args := []string{
		"--kubeconfig=" + r.kubeconfig,
		"--provider=skeleton",
		"--allowed-not-ready-nodes=-1",
		"--num-nodes=1",
		"--e2e-verify-service-account=false",
		"--kubectl-path=" + r.kubectl,
		"--report-dir=" + r.reportDir,
		"--e2e-output-dir=" + r.workDir,
		"--ginkgo.focus=" + r.focus,
		"--ginkgo.skip=" + r.skip,
		"--ginkgo.timeout=" + r.timeout.String(),
		"--ginkgo.no-color",
		"--ginkgo.v",
	}
	log, err := os.Create(r.logPath)
	if err != nil {
		return false, err
	}
	defer log.Close()
	fmt.Fprintf(log, "%s %s\n\n", r.bin, strings.Join(args, " "))

	cmd := exec.CommandContext(ctx, r.bin, args...)
	cmd.Dir = r.workDir
	cmd.Env = withoutEnv(os.Environ(), "KUBECONFIG")
	cmd.WaitDelay = 10 * time.Second
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		return false, err
	}
	var done atomic.Int64 // specs finished, for the progress line
	var last atomic.Int64 // when the last spec finished, in Unix nanoseconds
	last.Store(time.Now().UnixNano())
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(pr)
		sc.Buffer(nil, 4<<20)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(log, line)
			if r.verbose {
				fmt.Println(line)
			}
			// Ginkgo's verbose reporter opens each finished spec's
			// summary with a bullet (• passed or failed, S skipped).
			if strings.HasPrefix(line, "• ") || strings.HasPrefix(line, "S [SKIPPED]") {
				done.Add(1)
				last.Store(time.Now().UnixNano())
			}
		}
		io.Copy(log, pr)
	}()
	waited := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		pw.Close()
		waited <- err
	}()
	start := time.Now()
	tick := time.NewTicker(15 * time.Second)
	defer tick.Stop()
	for n := 1; ; n++ {
		select {
		case err := <-waited:
			<-copied
			return stalled, err
		case <-tick.C:
			if !r.verbose && n%2 == 0 {
				fmt.Printf("  %s: %d specs finished\n", time.Since(start).Round(time.Second), done.Load())
			}
			if !stalled && r.stall > 0 && time.Since(time.Unix(0, last.Load())) > r.stall {
				fmt.Printf("  no spec finished for %s: interrupting the running one\n", r.stall)
				stalled = true
				cmd.Process.Signal(os.Interrupt)
			}
		}
	}
}

func withoutEnv(env []string, name string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// The JUnit report the e2e framework writes (junit_01.xml); every spec of
// the binary is a test case, the ones focus and skip left out included.
type junitSuites struct {
	Suites []struct {
		Cases []junitCase `xml:"testcase"`
	} `xml:"testsuite"`
}

type junitCase struct {
	Name    string        `xml:"name,attr"`
	Status  string        `xml:"status,attr"`
	Time    float64       `xml:"time,attr"`
	Failure *junitMessage `xml:"failure"`
	Error   *junitMessage `xml:"error"`
	Skipped *junitMessage `xml:"skipped"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// result is one server's outcome.
type result struct {
	server   string
	took     time.Duration
	log      string
	passed   []string
	failed   []outcome
	skipped  []outcome // ran and skipped itself (a missing feature, provider, …)
	filtered int       // left out by focus and skip
	// suiteFailures are failures of the suite's set-up and tear-down
	// nodes (BeforeSuite and the like) rather than of a spec.
	suiteFailures []outcome
}

type outcome struct {
	name, reason string
}

func readReport(path string) (*result, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc junitSuites
	if err := xml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	res := &result{}
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			name, isSpec := strings.CutPrefix(c.Name, "[It] ")
			switch {
			case c.Failure != nil || c.Error != nil:
				m := c.Failure
				if m == nil {
					m = c.Error
				}
				o := outcome{name: name, reason: failureLine(m)}
				if m.Type == "interrupted" {
					o.reason = "hung: interrupted by the runner after no spec finished for a while (" + o.reason + ")"
				}
				if isSpec {
					res.failed = append(res.failed, o)
				} else {
					res.suiteFailures = append(res.suiteFailures, o)
				}
			case !isSpec:
				// A passed or skipped set-up node: not a spec.
			case c.Skipped != nil:
				// Ginkgo writes "skipped" alone for specs it did not
				// select, and "skipped - reason" for those that skipped
				// themselves.
				if reason, ok := strings.CutPrefix(c.Skipped.Message, "skipped - "); ok {
					res.skipped = append(res.skipped, outcome{name: name, reason: firstLine(reason)})
				} else {
					res.filtered++
				}
			case c.Status == "passed" || c.Status == "":
				res.passed = append(res.passed, name)
			default:
				res.failed = append(res.failed, outcome{name: name, reason: c.Status})
			}
		}
	}
	sort.Strings(res.passed)
	for _, l := range [][]outcome{res.failed, res.skipped, res.suiteFailures} {
		sort.Slice(l, func(i, j int) bool { return l[i].name < l[j].name })
	}
	return res, nil
}

// failureLine is the first line of a failure, without Ginkgo's [FAILED]
// or [PANICKED!] tag.
func failureLine(m *junitMessage) string {
	text := m.Message
	if text == "" {
		text = m.Text
	}
	line := firstLine(text)
	// Some failures print whole Go values on their first line.
	if len(line) > 300 {
		line = line[:300] + " …"
	}
	for _, tag := range []string{"[FAILED] ", "[PANICKED!] ", "[TIMEDOUT] ", "[INTERRUPTED] "} {
		line = strings.TrimPrefix(line, tag)
	}
	return line
}

// merge adds the outcomes of a later round, which skipped the specs r
// already has.
func (r *result) merge(o *result) {
	r.passed = append(r.passed, o.passed...)
	r.failed = append(r.failed, o.failed...)
	r.skipped = append(r.skipped, o.skipped...)
	r.suiteFailures = append(r.suiteFailures, o.suiteFailures...)
	r.filtered = o.filtered - len(r.passed) - len(r.failed) - len(r.skipped) + len(o.passed) + len(o.failed) + len(o.skipped)
	sort.Strings(r.passed)
	for _, l := range [][]outcome{r.failed, r.skipped, r.suiteFailures} {
		sort.Slice(l, func(i, j int) bool { return l[i].name < l[j].name })
	}
}

// ran lists the specs that have an outcome.
func (r *result) ran() []string {
	names := append([]string{}, r.passed...)
	for _, l := range [][]outcome{r.failed, r.skipped} {
		for _, o := range l {
			names = append(names, o.name)
		}
	}
	return names
}

func (r *result) total() int { return len(r.passed) + len(r.failed) + len(r.skipped) }

func (r *result) print(w io.Writer) {
	fmt.Fprintf(w, "\n%s: %d passed, %d failed, %d skipped, %d total (%d specs not selected) in %s\n",
		r.server, len(r.passed), len(r.failed), len(r.skipped), r.total(), r.filtered, r.took.Round(time.Second))
	if len(r.suiteFailures) > 0 {
		if r.total() == 0 {
			fmt.Fprintf(w, "no spec ran: ")
		}
		fmt.Fprintf(w, "suite set-up or tear-down failed:\n")
		for _, o := range r.suiteFailures {
			fmt.Fprintf(w, "  %s\n      %s\n", o.name, o.reason)
		}
	}
	if len(r.failed) > 0 {
		fmt.Fprintf(w, "failed:\n")
		for _, o := range r.failed {
			fmt.Fprintf(w, "  %s\n      %s\n", o.name, o.reason)
		}
	}
	if len(r.skipped) > 0 {
		fmt.Fprintf(w, "skipped:\n")
		for _, o := range r.skipped {
			fmt.Fprintf(w, "  %s\n      %s\n", o.name, o.reason)
		}
	}
	fmt.Fprintf(w, "log: %s\n", r.log)
}

// compare lists the specs that pass against want (kube-apiserver) but not
// against got (crdserver): what crdserver still has to fix.
func compare(w io.Writer, got, want *result) {
	passed := map[string]bool{}
	for _, n := range got.passed {
		passed[n] = true
	}
	var missing []string
	for _, n := range want.passed {
		if !passed[n] {
			missing = append(missing, n)
		}
	}
	fmt.Fprintf(w, "\n%s passes %d of the %d specs %s passes\n", got.server, len(want.passed)-len(missing), len(want.passed), want.server)
	for _, n := range missing {
		fmt.Fprintf(w, "  %s\n", n)
	}
}
