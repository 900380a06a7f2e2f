// Package migrate is the client side of storage version migration, what
// `crdserver migrate` runs: it creates a storagemigration.k8s.io/v1
// StorageVersionMigration for one resource on any server that serves the
// API, and draws the migration's progress until it succeeds or fails.
package migrate

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	svmv1 "k8s.io/api/storagemigration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/crdserver/crdserver/internal/builtin"
)

// Config is one migration to run. Its zero value needs only Resource.
type Config struct {
	// Kubeconfig names the server; empty uses client-go's default rules
	// ($KUBECONFIG, ~/.kube/config).
	Kubeconfig string
	// Resource is the resource to migrate as <plural>.<group>
	// ("widgets.example.com"), or <plural> for the core group.
	Resource string
	// Out receives the progress bar and the final line; nil discards.
	Out io.Writer
	// Poll is how often progress is read. Default 250ms.
	Poll time.Duration
	// Width is the progress bar's width in characters. Default 40.
	Width int
}

// Result is how a migration ended.
type Result struct {
	Name    string // the StorageVersionMigration's name
	Message string // the Succeeded condition's message
	Elapsed time.Duration
}

var svmGVR = svmv1.SchemeGroupVersion.WithResource(builtin.MigrationResource)

// ParseResource reads <plural>.<group>, or <plural> for the core group.
func ParseResource(s string) (schema.GroupResource, error) {
	resource, group, _ := strings.Cut(s, ".")
	if resource == "" || strings.ContainsAny(s, "/ ") {
		return schema.GroupResource{}, fmt.Errorf("resource %q: want <plural>.<group>, for example widgets.example.com", s)
	}
	return schema.GroupResource{Group: group, Resource: resource}, nil
}

// Run creates the migration and waits for it, drawing progress on
// cfg.Out. It returns an error when the migration fails, with the
// server's message, or when ctx ends first (the migration goes on).
func Run(ctx context.Context, cfg Config) (*Result, error) {
	gr, err := ParseResource(cfg.Resource)
	if err != nil {
		return nil, err
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 250 * time.Millisecond
	}
	if cfg.Width <= 0 {
		cfg.Width = 40
	}
	rc, err := restConfig(cfg.Kubeconfig)
	if err != nil {
		return nil, err
	}
	client, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	svms := client.Resource(svmGVR)
	start := time.Now()
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&svmv1.StorageVersionMigration{
		TypeMeta:   metav1.TypeMeta{APIVersion: svmv1.SchemeGroupVersion.String(), Kind: builtin.MigrationKind},
		ObjectMeta: metav1.ObjectMeta{GenerateName: generateName(gr)},
		Spec:       svmv1.StorageVersionMigrationSpec{Resource: metav1.GroupResource{Group: gr.Group, Resource: gr.Resource}},
	})
	if err != nil {
		return nil, err
	}
	created, err := svms.Create(ctx, unstructuredOf(u), metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating the StorageVersionMigration: %w", err)
	}
	name := created.GetName()
	fmt.Fprintf(cfg.Out, "storageversionmigration.storagemigration.k8s.io/%s created\n", name)

	bar := &bar{out: cfg.Out, width: cfg.Width}
	tick := time.NewTicker(cfg.Poll)
	defer tick.Stop()
	for {
		obj, err := svms.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			bar.end()
			return nil, fmt.Errorf("reading storageversionmigration %s: %w", name, err)
		}
		var svm svmv1.StorageVersionMigration
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &svm); err != nil {
			bar.end()
			return nil, err
		}
		if c := condition(&svm, svmv1.MigrationFailed); c != nil && c.Status == metav1.ConditionTrue {
			bar.end()
			return nil, fmt.Errorf("storageversionmigration %s failed: %s", name, c.Message)
		}
		if c := condition(&svm, svmv1.MigrationSucceeded); c != nil && c.Status == metav1.ConditionTrue {
			if done, total, ok := lastProgress(c.Message); ok {
				bar.draw(done, total)
			}
			bar.end()
			res := &Result{Name: name, Message: c.Message, Elapsed: time.Since(start)}
			fmt.Fprintf(cfg.Out, "%s in %s\n", c.Message, res.Elapsed.Round(time.Millisecond))
			return res, nil
		}
		if c := condition(&svm, svmv1.MigrationRunning); c != nil {
			if done, total, ok := builtin.ParseMigrationProgress(c.Message); ok {
				bar.draw(done, total)
			}
		}
		select {
		case <-ctx.Done():
			bar.end()
			return nil, fmt.Errorf("waiting for storageversionmigration %s: %w", name, ctx.Err())
		case <-tick.C:
		}
	}
}

// lastProgress reads the object count of the Succeeded message
// ("migrated N objects to V ...") as a full bar.
func lastProgress(msg string) (done, total int, ok bool) {
	var n int
	if _, err := fmt.Sscanf(msg, "migrated %d objects", &n); err != nil {
		return 0, 0, false
	}
	return n, n, true
}

func generateName(gr schema.GroupResource) string {
	name := gr.Resource
	if gr.Group != "" {
		name += "." + gr.Group
	}
	if len(name) > 57 {
		name = name[:57]
	}
	return strings.TrimRight(name, ".-") + "-"
}

func condition(svm *svmv1.StorageVersionMigration, typ svmv1.MigrationConditionType) *metav1.Condition {
	for i := range svm.Status.Conditions {
		if svm.Status.Conditions[i].Type == string(typ) {
			return &svm.Status.Conditions[i]
		}
	}
	return nil
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	cfg.UserAgent = "crdserver-migrate"
	return cfg, nil
}

// bar draws a one-line progress bar, redrawn in place with a carriage
// return.
type bar struct {
	out   io.Writer
	width int
	drawn bool
	last  string
}

func (b *bar) draw(done, total int) {
	frac := 1.0
	if total > 0 {
		frac = float64(min(done, total)) / float64(total)
	}
	full := int(frac * float64(b.width))
	line := fmt.Sprintf("[%s%s] %d/%d objects (%3.0f%%)", strings.Repeat("#", full), strings.Repeat(".", b.width-full), done, total, frac*100)
	if line == b.last {
		return
	}
	b.last = line
	fmt.Fprint(b.out, "\r"+line)
	b.drawn = true
}

// end finishes the bar's line, if one was drawn.
func (b *bar) end() {
	if b.drawn {
		fmt.Fprintln(b.out)
		b.drawn = false
	}
}

func unstructuredOf(m map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: m}
}
