package storeopt

// The option kinds: which constructors take an option, checked by the compiler. A
// backend declares its option types as aliases of these interfaces instantiated
// with its own config type C (so options of different backends never mix), and each
// constructor's variadic parameter is the kind it takes:
//
//	StoreOption    every store constructor
//	BytesOption    a BytesStore constructor: StoreOptions and the BytesStore-only ones
//	DeduperOption  NewDeduper
//	Option         every constructor
//
// The option functions build values with Store, Bytes and Any (no option is
// taken by NewDeduper alone, so there is no function for DeduperOption).
type (
	// BytesOption is taken by a BytesStore constructor that has options of its own.
	BytesOption[C any] interface{ ApplyBytes(*C) error }
	// StoreOption is taken by every store constructor (a BytesStore constructor
	// taking BytesOptions included).
	StoreOption[C any] interface {
		BytesOption[C]
		ApplyStore(*C) error
	}
	// DeduperOption is taken by NewDeduper.
	DeduperOption[C any] interface{ ApplyDeduper(*C) error }
	// Option is taken by every constructor.
	Option[C any] interface {
		StoreOption[C]
		DeduperOption[C]
	}
)

// The implementations, one per kind, so that no type assertion turns an option of
// one kind into another.
type (
	storeFunc[C any] func(*C) error
	bytesFunc[C any] func(*C) error
	anyFunc[C any]   func(*C) error
)

func (f storeFunc[C]) ApplyStore(c *C) error { return f(c) }
func (f storeFunc[C]) ApplyBytes(c *C) error { return f(c) }
func (f bytesFunc[C]) ApplyBytes(c *C) error { return f(c) }
func (f anyFunc[C]) ApplyStore(c *C) error   { return f(c) }
func (f anyFunc[C]) ApplyBytes(c *C) error   { return f(c) }
func (f anyFunc[C]) ApplyDeduper(c *C) error { return f(c) }

// Store returns f as a StoreOption.
func Store[C any](f func(*C) error) StoreOption[C] { return storeFunc[C](f) }

// Bytes returns f as a BytesOption.
func Bytes[C any](f func(*C) error) BytesOption[C] { return bytesFunc[C](f) }

// Any returns f as an Option.
func Any[C any](f func(*C) error) Option[C] { return anyFunc[C](f) }
