// Package nilcheck tells a nil client from a usable one, for constructors.
package nilcheck

import "reflect"

// IsNil reports whether v is nil or an interface holding a nil pointer, map,
// slice, func or channel (a typed nil such as (*ddb.Client)(nil)), which would panic
// on its first use. Constructors check their clients and monoids with it and refuse
// such a value with their package's ErrInvalidArgument.
func IsNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan:
		return rv.IsNil()
	}
	return false
}
