// turnstile/detail/frame.hpp: immutable, reference-counted binding frames: the
// storage behind a fiber's context slot (FiberLocal's bindings).
//
// A fiber's context is a pointer to the newest frame of an immutable linked
// stack (newest first). Frames are never mutated after construction, so a chain
// head can be shared by a parent, its structured children and any number of
// captured snapshots: sharing is a pointer copy plus one reference.
//
// Invariants (cited where maintained):
//   [FRAME-I1] a frame's fields are written only before it is first published
//              (constructor), then only read: no frame is mutated while shared.
//   [FRAME-I2] a frame owns one reference to its `prev`; refs_ counts the
//              holders of this frame (fiber heads, children, snapshots, the next
//              frame). New references are only made from an existing one, so an
//              increment can be relaxed.
//   [FRAME-I3] the holder that drops the last reference frees the frame; every
//              other holder's accesses happen-before the free (release on each
//              decrement, acquire before the free).
//
// BasicFrame<Sync> is the one algorithm: the product uses StdSync,
// model/frame_model.cpp uses RelacySync.
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>

namespace turnstile::detail {

template <class Sync>
class BasicFrame {
 public:
  BasicFrame(const void* key, BasicFrame* prev_adopted) noexcept : key_(key), prev_(prev_adopted) {}
  BasicFrame(const BasicFrame&) = delete;
  BasicFrame& operator=(const BasicFrame&) = delete;

  const void* key() const noexcept { return key_; }
  BasicFrame* prev() const noexcept { return prev_; }

  // [FRAME-I2] a new holder is made from an existing one, so nothing needs to
  // be ordered by the increment itself.
  void retain() noexcept {
    refs_.fetch_add(1, std::memory_order_relaxed);
  }

  // Drops one reference; frees this frame, and then each predecessor whose last
  // reference that was, iteratively (a long chain never recurses).
  static void release(BasicFrame* f) noexcept {
    while (f != nullptr) {
      // [FRAME-I3] release: this holder's reads of the frame happen-before the
      // free; acquire (on the last one): pairs with every other holder's release.
      if (f->refs_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
      BasicFrame* older = f->prev_;
      f->destroy();
      f = older;  // the frame's reference to prev is dropped next iteration
    }
  }

 protected:
  virtual ~BasicFrame() = default;
  // Deleting through the dynamic type (the typed value lives in a subclass).
  virtual void destroy() noexcept { delete this; }

 private:
  const void* const key_;       // [FRAME-I1]
  BasicFrame* const prev_;      // [FRAME-I1] owned reference [FRAME-I2]
  typename Sync::template atomic<std::uint32_t> refs_{1};
};

// An owning handle to one reference of a frame chain head (may be empty).
template <class Sync>
class BasicFrameRef {
 public:
  using Frame = BasicFrame<Sync>;
  BasicFrameRef() noexcept = default;
  // Adopts a reference the caller already owns.
  static BasicFrameRef adopt(Frame* f) noexcept {
    BasicFrameRef r;
    r.f_ = f;
    return r;
  }
  BasicFrameRef(const BasicFrameRef& o) noexcept : f_(o.f_) {
    if (f_) f_->retain();
  }
  BasicFrameRef(BasicFrameRef&& o) noexcept : f_(std::exchange(o.f_, nullptr)) {}
  BasicFrameRef& operator=(BasicFrameRef o) noexcept {
    std::swap(f_, o.f_);
    return *this;
  }
  ~BasicFrameRef() { Frame::release(f_); }

  Frame* get() const noexcept { return f_; }
  explicit operator bool() const noexcept { return f_ != nullptr; }
  // Gives up the reference without dropping it.
  Frame* release() noexcept { return std::exchange(f_, nullptr); }
  friend bool operator==(const BasicFrameRef& a, const BasicFrameRef& b) noexcept {
    return a.f_ == b.f_;
  }

 private:
  Frame* f_ = nullptr;
};

}  // namespace turnstile::detail
