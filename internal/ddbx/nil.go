package ddbx

import "reflect"

// IsNil reports whether client is nil or an interface holding a nil pointer (such
// as a (*ddb.Client)(nil)), which would panic on its first call. Constructors check
// it to refuse such a client up front.
func IsNil(client any) bool {
	if client == nil {
		return true
	}
	v := reflect.ValueOf(client)
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan:
		return v.IsNil()
	}
	return false
}
