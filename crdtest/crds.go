package crdtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// document is one object to create at start, and where it came from, for
// error messages.
type document struct {
	source string // a file name, or a description of a Go object
	obj    *unstructured.Unstructured
	gvr    schema.GroupVersionResource
}

// crdDocuments collects the CRDs of Options.CRDs, CRDDirectoryPaths and
// CRDFS, in that order.
func (o Options) crdDocuments() ([]document, error) {
	var docs []document
	for i, c := range o.CRDs {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c)
		if err != nil {
			return nil, fmt.Errorf("Options.CRDs[%d] (%s): %w", i, c.Name, err)
		}
		obj := &unstructured.Unstructured{Object: m}
		obj.SetAPIVersion(apiextensionsv1.SchemeGroupVersion.String())
		obj.SetKind("CustomResourceDefinition")
		docs = append(docs, document{source: fmt.Sprintf("Options.CRDs[%d]", i), obj: obj, gvr: crdGVR})
	}
	for _, p := range o.CRDDirectoryPaths {
		files, err := crdFiles(p)
		if errors.Is(err, fs.ErrNotExist) && o.IgnoreMissingCRDPaths {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, fmt.Errorf("reading CRDs: %w", err)
			}
			d, err := decodeCRDs(f, data)
			if err != nil {
				return nil, err
			}
			docs = append(docs, d...)
		}
	}
	if o.CRDFS != nil {
		err := fs.WalkDir(o.CRDFS, ".", func(name string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() || !isManifest(name) {
				return err
			}
			data, err := fs.ReadFile(o.CRDFS, name)
			if err != nil {
				return err
			}
			d, err := decodeCRDs(name, data)
			docs = append(docs, d...)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("reading CRDs from Options.CRDFS: %w", err)
		}
	}
	return docs, nil
}

// crdFiles resolves one of CRDDirectoryPaths: a glob pattern, a directory
// or a file. It fails with fs.ErrNotExist when nothing is there.
func crdFiles(p string) ([]string, error) {
	if strings.ContainsAny(p, "*?[") {
		matches, err := filepath.Glob(p)
		if err != nil {
			return nil, fmt.Errorf("CRD path %q: %w", p, err)
		}
		if len(matches) == 0 {
			return nil, fmt.Errorf("CRD path %q matches nothing: %w", p, fs.ErrNotExist)
		}
		var files []string
		for _, m := range matches {
			f, err := crdFiles(m)
			if err != nil {
				return nil, err
			}
			files = append(files, f...)
		}
		return files, nil
	}
	st, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("CRD path: %w", err)
	}
	if !st.IsDir() {
		return []string{p}, nil
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return nil, fmt.Errorf("CRD path: %w", err)
	}
	var files []string
	for _, e := range entries {
		if !e.IsDir() && isManifest(e.Name()) {
			files = append(files, filepath.Join(p, e.Name()))
		}
	}
	return files, nil
}

func isManifest(name string) bool {
	switch path.Ext(name) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// decodeCRDs reads the CustomResourceDefinitions of a file of YAML (or
// JSON) documents, skipping other kinds and empty documents.
func decodeCRDs(file string, data []byte) ([]document, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var docs []document
	for i := 0; ; i++ {
		var m map[string]any
		err := dec.Decode(&m)
		if err == io.EOF {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, i+1, err)
		}
		obj := &unstructured.Unstructured{Object: m}
		if len(m) == 0 || obj.GetKind() != "CustomResourceDefinition" {
			continue
		}
		if obj.GroupVersionKind().Group != crdGVR.Group {
			return nil, fmt.Errorf("%s: document %d: CustomResourceDefinition of unknown apiVersion %q", file, i+1, obj.GetAPIVersion())
		}
		docs = append(docs, document{source: file, obj: obj, gvr: crdGVR})
	}
}

// apply creates docs and waits until the CRDs among them are Established
// and their resources served.
func (s *Server) apply(ctx context.Context, docs []document) error {
	if len(docs) == 0 {
		return nil
	}
	client, err := dynamic.NewForConfig(s.Config)
	if err != nil {
		return err
	}
	pending := map[string]string{} // CRD name → source
	var firstRV string
	for _, d := range docs {
		created, err := client.Resource(d.gvr).Create(ctx, d.obj, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("%s: creating %s %s: %w", d.source, d.obj.GetKind(), d.obj.GetName(), err)
		}
		if d.gvr != crdGVR {
			// A consistent read returns once the server's caches hold
			// the object: admission then sees a new webhook at once.
			if _, err := client.Resource(d.gvr).Get(ctx, created.GetName(), metav1.GetOptions{}); err != nil {
				return fmt.Errorf("%s: reading %s %s back: %w", d.source, d.obj.GetKind(), d.obj.GetName(), err)
			}
			continue
		}
		pending[created.GetName()] = d.source
		if firstRV == "" {
			firstRV = created.GetResourceVersion()
		}
	}
	if len(pending) == 0 {
		return nil
	}
	return waitEstablished(ctx, client, pending, firstRV)
}

// establishTimeout bounds the wait for CRDs to be Established.
const establishTimeout = 30 * time.Second

// waitEstablished watches CRDs from just before the first was created
// until every pending one is Established, failing early with the
// server's message when one's names are refused.
func waitEstablished(ctx context.Context, client dynamic.Interface, pending map[string]string, fromRV string) error {
	ctx, cancel := context.WithTimeout(ctx, establishTimeout)
	defer cancel()
	// Watching from the first CRD's revision replays every later change,
	// so no status update can be missed between create and watch.
	w, err := client.Resource(crdGVR).Watch(ctx, metav1.ListOptions{ResourceVersion: fromRV})
	if err != nil {
		return fmt.Errorf("watching CRDs: %w", err)
	}
	defer w.Stop()
	for len(pending) > 0 {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return fmt.Errorf("CRD watch ended with %s not Established", slices.Sorted(maps.Keys(pending)))
			}
			if ev.Type == watch.Error {
				return fmt.Errorf("watching CRDs: %v", ev.Object)
			}
			obj, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			source, ok := pending[obj.GetName()]
			if !ok {
				continue
			}
			status, reason, message := condition(obj, "NamesAccepted")
			if status == "False" {
				return fmt.Errorf("%s: CustomResourceDefinition %s: names not accepted: %s: %s", source, obj.GetName(), reason, message)
			}
			if status, _, _ := condition(obj, "Established"); status == "True" {
				delete(pending, obj.GetName())
			}
		case <-ctx.Done():
			return fmt.Errorf("CRDs %s not Established after %s", slices.Sorted(maps.Keys(pending)), establishTimeout)
		}
	}
	return nil
}

func condition(obj *unstructured.Unstructured, typ string) (status, reason, message string) {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			s, _ := m["status"].(string)
			r, _ := m["reason"].(string)
			msg, _ := m["message"].(string)
			return s, r, msg
		}
	}
	return "", "", ""
}
