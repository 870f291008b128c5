#pragma once
// An immutable text that copies share. A scheduler pass gives tens of thousands of waiting jobs a few hundred
// distinct reasons; held this way, each reason is stored once and handing it to a job copies a pointer. It
// keeps the jobs the text names (ref_text.h) with it, so that every holder of a reason holds them too.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/ref_text.h"

namespace allot {

class SharedText {
 public:
  SharedText() = default;
  SharedText(std::string text) : text_(std::make_shared<const RefText>(std::move(text))) {}  // NOLINT: a text is a string
  SharedText(const char* text) : SharedText(std::string(text)) {}                            // NOLINT
  SharedText(RefText text) : text_(std::make_shared<const RefText>(std::move(text))) {}      // NOLINT: with its references

  const std::string& str() const { return text_ ? text_->str() : empty_text().str(); }
  const std::vector<JobRef>& refs() const { return text_ ? text_->refs() : empty_text().refs(); }
  // The text with its references, to build a longer one from.
  const RefText& ref_text() const { return text_ ? *text_ : empty_text(); }
  bool empty() const { return str().empty(); }
  operator const std::string&() const { return str(); }  // NOLINT: reads as the string it holds
  friend bool operator==(const SharedText& a, const SharedText& b) {
    return a.text_ == b.text_ || (a.str() == b.str() && a.refs() == b.refs());
  }

 private:
  static const RefText& empty_text() {
    static const RefText kEmpty;
    return kEmpty;
  }
  std::shared_ptr<const RefText> text_;
};

}  // namespace allot
