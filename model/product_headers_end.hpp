// model/product_headers_end.hpp: restores Relacy's new/delete macros after the
// product's headers (see product_headers_begin.hpp). No include guard.
#pragma pop_macro("delete")
#pragma pop_macro("new")
