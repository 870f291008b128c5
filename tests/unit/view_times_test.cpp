// RFC 3339 times as the API writes and reads them (view/times.h): the formatter, the parser, their round trip,
// fractions of a second, offsets, and what is refused with which message.
#include <gtest/gtest.h>

#include "view/times.h"

namespace allot::view::view_times_test {
namespace {

bool has(const std::string& text, const std::string& want) { return text.find(want) != std::string::npos; }

TEST(Times, FormatsUtc) {
  EXPECT_EQ(rfc3339(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(rfc3339(1'795'550'700), "2026-11-24T20:05:00Z");
  EXPECT_EQ(rfc3339(951'782'400), "2000-02-29T00:00:00Z");  // a leap day of a year divisible by 400
  EXPECT_EQ(rfc3339(4'107'542'399), "2100-02-28T23:59:59Z");  // 2100 is no leap year
  EXPECT_EQ(rfc3339(-1), "1969-12-31T23:59:59Z");
  EXPECT_EQ(rfc3339(253'402'300'799), "9999-12-31T23:59:59Z");
}

TEST(Times, MillisecondsHaveAFractionOnlyWhenThereIsOne) {
  EXPECT_EQ(rfc3339_ms(1'795'550'700'250), "2026-11-24T20:05:00.250Z");
  EXPECT_EQ(rfc3339_ms(1'795'550'700'007), "2026-11-24T20:05:00.007Z");
  EXPECT_EQ(rfc3339_ms(1'795'550'700'000), "2026-11-24T20:05:00Z");
  EXPECT_EQ(rfc3339_ms(-250), "1969-12-31T23:59:59.750Z");
}

TEST(Times, RoundTrip) {
  for (int64_t ms : {int64_t{0}, int64_t{1}, int64_t{999}, int64_t{1'700'000'000'000}, int64_t{1'795'550'700'250},
                     int64_t{951'868'799'999}, int64_t{-86'400'001}, int64_t{253'402'300'799'999}}) {
    auto back = parse_rfc3339_ms(rfc3339_ms(ms));
    ASSERT_TRUE(back.ok()) << rfc3339_ms(ms) << ": " << back.error().message;
    EXPECT_EQ(*back, ms) << rfc3339_ms(ms);
  }
  // Every second of a day around a leap day, and the first of every day for 800 years (two 400-year eras).
  for (Time t = 951'696'000; t < 951'696'000 + 3 * 86'400; t += 7) EXPECT_EQ(*parse_rfc3339(rfc3339(t)), t);
  for (Time t = 0; t < int64_t{800} * 366 * 86'400; t += 86'400) ASSERT_EQ(*parse_rfc3339(rfc3339(t)), t) << rfc3339(t);
}

TEST(Times, ParsesFractionsOffsetsAndLowerCase) {
  EXPECT_EQ(*parse_rfc3339_ms("2026-11-24T20:05:00.25Z"), 1'795'550'700'250);
  EXPECT_EQ(*parse_rfc3339_ms("2026-11-24T20:05:00.2509999Z"), 1'795'550'700'250);  // past milliseconds: dropped
  EXPECT_EQ(*parse_rfc3339_ms("2026-11-24T21:05:00+01:00"), 1'795'550'700'000);
  EXPECT_EQ(*parse_rfc3339_ms("2026-11-24T15:35:00-04:30"), 1'795'550'700'000);
  EXPECT_EQ(*parse_rfc3339_ms("2026-11-24t20:05:00z"), 1'795'550'700'000);
  EXPECT_EQ(*parse_rfc3339("2026-11-24T20:05:00.999Z"), 1'795'550'700);  // whole seconds: the fraction dropped
  EXPECT_EQ(*parse_rfc3339("1969-12-31T23:59:59.500Z"), -1);             // towards the past
}

TEST(Times, RefusesWhatIsNotRfc3339AndSaysWhy) {
  const std::pair<const char*, const char*> bad[] = {
      {"", "the date must read YYYY-MM-DD"},
      {"1795550700", "the date must read YYYY-MM-DD"},
      {"2026-11-24", "the date and the time are joined by T"},
      {"2026-11-24 20:05:00Z", "the date and the time are joined by T"},
      {"2026-11-24T20:05Z", "the time must read HH:MM:SS"},
      {"2026-13-01T00:00:00Z", "month 13; allowed: 01..12"},
      {"2026-02-29T00:00:00Z", "day 29; that month has 28 days"},
      {"2026-11-24T24:00:00Z", "the time must be 00:00:00..23:59:59"},
      {"2026-12-31T23:59:60Z", "the time must be 00:00:00..23:59:59"},
      {"2026-11-24T20:05:00", "it must end in Z (UTC) or an offset like +01:00"},
      {"2026-11-24T20:05:00.Z", "a '.' must be followed by the digits"},
      {"2026-11-24T20:05:00+0100", "an offset must read +HH:MM or -HH:MM"},
      {"2026-11-24T20:05:00Zjunk", "unexpected text after the offset"},
  };
  for (const auto& [text, why] : bad) {
    auto r = parse_rfc3339_ms(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_TRUE(has(r.error().message, why)) << text << ": " << r.error().message;
    EXPECT_TRUE(has(r.error().message, "expected e.g. 2026-11-24T20:05:00Z")) << r.error().message;
  }
}

TEST(Times, InputTakesRfc3339OrUnixSeconds) {
  EXPECT_EQ(*parse_time_input("2026-11-24T20:05:00Z", "since"), 1'795'550'700);
  EXPECT_EQ(*parse_time_input("1795550700", "since"), 1'795'550'700);  // what clients sent before
  auto r = parse_time_input("yesterday", "query parameter since");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(has(r.error().message, "query parameter since: 'yesterday' is not an RFC 3339 time")) << r.error().message;
  EXPECT_TRUE(has(r.error().message, "or a whole number of Unix seconds")) << r.error().message;
  EXPECT_FALSE(parse_time_input("-5", "since").ok());
}

TEST(Times, JsonViewsWriteAndReadBothStyles) {
  EXPECT_EQ(time_json(1'795'550'700, Times::kRfc3339), "2026-11-24T20:05:00Z");
  EXPECT_EQ(time_json(20, Times::kSeconds), 20);  // the simulator's virtual seconds
  EXPECT_EQ(time_of(nlohmann::json("2026-11-24T20:05:00.250Z")), 1'795'550'700);
  EXPECT_EQ(time_ms_of(nlohmann::json("2026-11-24T20:05:00.250Z")), 1'795'550'700'250);
  EXPECT_EQ(time_of(nlohmann::json(1'795'550'700)), 1'795'550'700);  // an older server's number
  EXPECT_EQ(time_of(nlohmann::json("soon")), std::nullopt);
  EXPECT_EQ(time_of(nlohmann::json(nullptr)), std::nullopt);
}

}  // namespace
}  // namespace allot::view::view_times_test
