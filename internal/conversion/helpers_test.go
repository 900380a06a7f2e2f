package conversion_test

import "runtime"

func runtimeGosched() { runtime.Gosched() }
