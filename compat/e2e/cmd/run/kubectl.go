package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// A kubectl line runs kubectl with the rest of the line as its arguments,
// split as a shell splits words ('single' and "double" quotes group, a
// backslash escapes the next character), against each server's admin
// kubeconfig, and compares what it prints: its exit code, its standard
// output and its standard error, with what differs between any two
// servers started apart masked (see kubectlMasks):
//
//	kubectl get crontabs -o wide
//	kubectl apply -f requests/kubectl/crontab.yaml
//	kubectl apply -f - stdin=@requests/kubectl/crontab.yaml
//	kubectl get crontabs -o 'custom-columns=NAME:.metadata.name' kubectl=1.29
//	setup kubectl label crontab x a=b
//	wait kubectl get crontabs
//
// Modifiers end the line: "stdin=@FILE" feeds FILE to kubectl's standard
// input, and "kubectl=1.NN" runs that release's kubectl instead of 1.33
// (those of the Google Cloud SDK). kubectl runs in the requests file's
// directory, so "-f FILE" names a file as @FILE does. "setup" runs it
// without comparing; "wait" repeats it until it exits 0.

// defaultKubectl is the kubectl release a kubectl line runs.
const defaultKubectl = "1.33"

// kubectlDir holds kubectl.1.NN, one binary per release.
const kubectlDir = "/usr/lib/google-cloud-sdk/bin"

// kubectlTimeout bounds one kubectl run (a watch ends by its own
// --request-timeout well before).
const kubectlTimeout = time.Minute

// parseKubectl reads the kubectl line text (what follows "kubectl") into
// r.
func parseKubectl(r *requestLine, text, dir string) error {
	args, err := splitWords(text)
	if err != nil {
		return err
	}
	r.method, r.kubectlVersion = "kubectl", defaultKubectl
	for len(args) > 0 {
		last := args[len(args)-1]
		switch {
		case strings.HasPrefix(last, "stdin=@"):
			if r.stdin, err = os.ReadFile(filepath.Join(dir, strings.TrimPrefix(last, "stdin=@"))); err != nil {
				return err
			}
		case regexp.MustCompile(`^kubectl=1\.[0-9]+$`).MatchString(last):
			r.kubectlVersion = strings.TrimPrefix(last, "kubectl=")
		default:
			r.kubectl, r.path = args, strings.Join(args, " ")
			return nil
		}
		args = args[:len(args)-1]
	}
	return errors.New("kubectl without arguments")
}

// splitWords splits s into words as a POSIX shell does, without
// expansions: blanks separate words, single quotes keep everything to
// the next one, double quotes keep everything but a backslash's escape of
// " and \, and a backslash outside quotes keeps the next character.
func splitWords(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
			continue
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unterminated single quote")
			}
			w.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\') {
					i++
				}
				w.WriteByte(s[i])
			}
			if i == len(s) {
				return nil, errors.New("unterminated double quote")
			}
		case c == '\\' && i+1 < len(s):
			i++
			w.WriteByte(s[i])
		default:
			w.WriteByte(c)
		}
		inWord = true
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}

// kubectlRun runs r's kubectl against the server of kubeconfig, in dir
// (the requests file's), with home as its home (its discovery cache is
// the server's own) and reduces what it printed to an answer: the exit
// code as the code, the masked output as the body.
func kubectlRun(ctx context.Context, r requestLine, kubeconfig, home, dir string) (answer, error) {
	bin := filepath.Join(kubectlDir, "kubectl."+r.kubectlVersion)
	ctx, cancel := context.WithTimeout(ctx, kubectlTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, r.kubectl...)
	cmd.Dir = dir
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"KUBECONFIG=" + kubeconfig,
		"KUBECACHEDIR=" + filepath.Join(home, "cache"),
		"TZ=UTC",
		"LANG=C",
	}
	cmd.Stdin = bytes.NewReader(r.stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	code := 0
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		return answer{}, err
	}
	if ctx.Err() != nil {
		return answer{}, fmt.Errorf("kubectl %s: did not exit within %s", r.path, kubectlTimeout)
	}
	return answer{code: code, contentType: "kubectl", body: "stdout:\n" + maskKubectl(stdout.String()) + "stderr:\n" + maskKubectl(stderr.String())}, nil
}

// kubectlMasks are what two servers started apart print differently
// through kubectl, each replaced as it says, in order:
var kubectlMasks = []struct {
	re   *regexp.Regexp
	with string
}{
	// A JSON Web Token (create token): signed by each server's own key.
	{regexp.MustCompile(`eyJ[A-Za-z0-9_-]+\.eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+`), "<token>"},
	// Times: RFC 3339 (YAML, JSON, custom columns), RFC 1123 with a
	// numeric zone (describe), and Go's time.Time String (describe's
	// older fields).
	{regexp.MustCompile(`[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})`), "<time>"},
	{regexp.MustCompile(`(Mon|Tue|Wed|Thu|Fri|Sat|Sun), [0-9]{2} [A-Z][a-z]{2} [0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2} [+-][0-9]{4}`), "<time>"},
	{regexp.MustCompile(`[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)? [+-][0-9]{4}( [A-Z]+)?`), "<time>"},
	// A klog line's header (a warning kubectl logs): its time and
	// process id.
	{regexp.MustCompile(`^([IWEF])[0-9]{4} [0-9:.]+ +[0-9]+ `), "$1<klog> "},
	// kubectl diff's temporary directories, named at random.
	{regexp.MustCompile(`/(LIVE|MERGED)-[0-9]+/`), "/$1-<n>/"},
	// uids, anywhere (a Job's controller-uid label too).
	{uidText, "<uid>"},
	// resourceVersions: YAML's and JSON's member, a message's
	// "resourceVersion=N", describe's "Resource Version:  N".
	{regexp.MustCompile(`((?i:resource ?version)"?[:=][ \t]*)"?[0-9]+"?`), "$1<rv>"},
	// The address a server listens on: its port is picked free.
	{regexp.MustCompile(`(127\.0\.0\.1|localhost):[0-9]+`), "$1:<port>"},
	// Cluster IPs: each server allocates them from 10.0.0.0/24 at random.
	{regexp.MustCompile(`\b10\.0\.0\.[0-9]{1,3}\b`), "10.0.0.<ip>"},
	// A generated name's suffix: five characters of the alphabet
	// upstream's name generator draws from, after a name and a dash. A
	// name the script writes must not end so (none of its words do: each
	// has a vowel or a letter the generator leaves out).
	{regexp.MustCompile(`\b([a-z0-9][-a-z0-9.]*-)[bcdfghjklmnpqrstvwxz2456789]{5}\b`), "$1<suffix>"},
	// Ages (AGE, LAST SEEN, a date column, "Active Deadline Seconds"
	// aside): kubectl's short durations, a word of their own. Then
	// runs of blanks after a word become two spaces, since a column is as
	// wide as its widest cell, an age's width included; indentation is
	// kept.
	{regexp.MustCompile(`(^|[ \t(])[0-9]+(s|m|h|d|y)([0-9]+(s|m|h|d))?($|[ \t),])`), "$1<age>$5"},
	{regexp.MustCompile(`([^ \t\n])[ \t]{2,}`), "$1  "},
}

// maskKubectl is s, kubectl's output, with kubectlMasks applied line by
// line.
func maskKubectl(s string) string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		for _, m := range kubectlMasks {
			// An age mask consumes the blank after it: apply it twice
			// so that ages side by side are both masked.
			l = m.re.ReplaceAllString(l, m.with)
			l = m.re.ReplaceAllString(l, m.with)
		}
		lines[i] = l
	}
	return strings.Join(lines, "\n") + "\n"
}

// lineDiff prints a and b, two kubectl answers, line by line: lines both
// have with two spaces before them, a's alone with "-", b's alone with
// "+" (a longest common subsequence of their lines).
func lineDiff(a, b string) string {
	x, y := strings.Split(a, "\n"), strings.Split(b, "\n")
	// lcs[i][j] is the length of the longest common subsequence of
	// x[i:] and y[j:].
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			fmt.Fprintf(&out, "      %s\n", x[i])
			i++
			j++
		case j == len(y) || (i < len(x) && lcs[i+1][j] >= lcs[i][j+1]):
			fmt.Fprintf(&out, "    - %s\n", x[i])
			i++
		default:
			fmt.Fprintf(&out, "    + %s\n", y[j])
			j++
		}
	}
	return out.String()
}
