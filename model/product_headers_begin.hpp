// model/product_headers_begin.hpp: include before the product's headers (and
// after relacy_sync.hpp); pair with product_headers_end.hpp.
//
// Relacy defines `new` and `delete` as macros (to attach source locations to
// allocations). The product writes `= delete` and `delete this`, which the macros
// would mangle, so they are hidden while the product's headers are read. The
// product's allocations are still tracked by Relacy (leaks, use after free,
// double free): Relacy replaces the global operator new/delete as well.
// No include guard: this file is meant to be included more than once.
#pragma push_macro("new")
#pragma push_macro("delete")
#undef new
#undef delete
