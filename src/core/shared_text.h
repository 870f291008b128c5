#pragma once
// An immutable text that copies share. A scheduler pass gives tens of thousands of waiting jobs a few hundred
// distinct reasons; held this way, each reason is stored once and handing it to a job copies a pointer.
#include <memory>
#include <string>
#include <string_view>

namespace allot {

class SharedText {
 public:
  SharedText() = default;
  SharedText(std::string text) : text_(std::make_shared<const std::string>(std::move(text))) {}  // NOLINT: a text is a string
  SharedText(const char* text) : SharedText(std::string(text)) {}                                // NOLINT

  const std::string& str() const { return text_ ? *text_ : empty(); }
  operator const std::string&() const { return str(); }  // NOLINT: reads as the string it holds
  friend bool operator==(const SharedText& a, const SharedText& b) { return a.text_ == b.text_ || a.str() == b.str(); }

 private:
  static const std::string& empty() {
    static const std::string kEmpty;
    return kEmpty;
  }
  std::shared_ptr<const std::string> text_;
};

}  // namespace allot
