// Package schemabench measures crdserver's schema pipeline (prune, default,
// validate) against upstream apiextensions-apiserver's own code for the same
// steps, on the same schema and object, in one benchmark run. It holds only
// tests; it lives in the compat module so that the main module never
// depends on upstream's server packages.
package schemabench
