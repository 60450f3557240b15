// The calls between the tests and the candidate, which run in two C++ processes: one JSON
// line per message (pytest_humanfix/sandbox/inside/wire.py's form), each value typed on both
// sides by the entry point's declared signature. The candidate's program ends with a `main`
// that calls `humanfix_wire::answer_calls`; the tests' program has a stub of the entry point
// that calls `humanfix_wire::call`. Harness code, precompiled with BigCode's include helper
// (languages/cpp.py), so it may use only what that helper includes, and it declares no name
// outside its namespace.
//
// A value: bool as true/false; char as a one-byte string; any other integer as a JSON integer
// (a value out of the declared type's range is refused, never cut); float, double and long
// double with enough digits to read back the same value (max_digits10: %.9g, %.17g, %.21Lg),
// NaN, Infinity and -Infinity as Python's json writes them, -0 kept; std::string as a JSON
// string of its bytes, each byte outside printable ASCII as \u00XX (so any byte string
// crosses); vector, list, deque, set and multiset as arrays; map and multimap as arrays of
// [key, value] pairs, in their order; pair as [first, second]; boost::any as a one-key object
// naming the type it holds ({"int": 4}, {"string": "a"}, {"empty": null}), for the types in
// `Codec<boost::any>`: any other is refused. A message is at most 16 MiB and nests at most
// 100 deep. Whatever the other side sends, the reader either gives a value of the declared
// type or throws `Error`.

#ifndef HUMANFIX_WIRE_HPP
#define HUMANFIX_WIRE_HPP

#include <cxxabi.h>

namespace humanfix_wire {

const std::size_t MESSAGE_BYTES = 16u << 20;
const int DEPTH = 100;
const int CALLS_IN = 3, CALLS_OUT = 4;
const std::size_t SHOWN_CHARS = 200;

struct Error : std::runtime_error {
    explicit Error(const std::string& what) : std::runtime_error(what) {}
};

inline std::string type_name(const std::type_info& type) {
    int status = 0;
    char* readable = abi::__cxa_demangle(type.name(), 0, 0, &status);
    std::string name = status == 0 && readable ? readable : type.name();
    std::free(readable);
    return name;
}

// Reads one message, a JSON text, by the types it is read into.
class Reader {
public:
    explicit Reader(const std::string& text) : text_(text), at_(0), depth_(0) {}

    char peek() {
        while (at_ < text_.size() && std::strchr(" \t\r\n", text_[at_]) && text_[at_]) ++at_;
        return at_ < text_.size() ? text_[at_] : '\0';
    }
    void expect(char wanted) {
        if (peek() != wanted) fail(std::string("expected '") + wanted + "'");
        ++at_;
    }
    bool take(char wanted) {
        if (peek() != wanted) return false;
        ++at_;
        return true;
    }
    void keyword(const char* word) {
        peek();
        std::size_t length = std::strlen(word);
        if (text_.compare(at_, length, word) != 0) fail(std::string("expected ") + word);
        at_ += length;
    }
    bool boolean() {
        if (peek() == 't') { keyword("true"); return true; }
        keyword("false");
        return false;
    }
    // A JSON number's text, or NaN, Infinity, -Infinity.
    std::string number() {
        peek();
        std::size_t start = at_;
        for (const char* word : {"NaN", "Infinity", "-Infinity"}) {
            std::size_t length = std::strlen(word);
            if (text_.compare(at_, length, word) == 0) {
                at_ += length;
                return word;
            }
        }
        if (at_ < text_.size() && text_[at_] == '-') ++at_;
        std::size_t digits = skip_digits();
        if (digits == 0 || (digits > 1 && text_[at_ - digits] == '0')) fail("expected a number");
        if (at_ < text_.size() && text_[at_] == '.') {
            ++at_;
            if (skip_digits() == 0) fail("expected digits after '.'");
        }
        if (at_ < text_.size() && (text_[at_] == 'e' || text_[at_] == 'E')) {
            ++at_;
            if (at_ < text_.size() && (text_[at_] == '+' || text_[at_] == '-')) ++at_;
            if (skip_digits() == 0) fail("expected an exponent");
        }
        return text_.substr(start, at_ - start);
    }
    std::string string() {
        expect('"');
        std::string bytes;
        while (true) {
            if (at_ >= text_.size()) fail("a string without its end");
            unsigned char c = text_[at_++];
            if (c == '"') return bytes;
            if (c < 0x20) fail("a control byte in a string");
            if (c != '\\') { bytes += char(c); continue; }
            if (at_ >= text_.size()) fail("a string without its end");
            char escaped = text_[at_++];
            const char* from = "\"\\/bfnrt";
            const char* to = "\"\\/\b\f\n\r\t";
            if (const char* found = std::strchr(from, escaped)) {
                if (escaped) { bytes += to[found - from]; continue; }
            }
            if (escaped != 'u' || at_ + 4 > text_.size()) fail("an unknown escape in a string");
            unsigned code = 0;
            for (int i = 0; i < 4; ++i) {
                char h = text_[at_++];
                int digit = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10
                          : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
                if (digit < 0) fail("a bad \\u escape");
                code = code * 16 + digit;
            }
            if (code > 0xff) fail("a \\u escape above \\u00ff (a string crosses as bytes)");
            bytes += char(code);
        }
    }
    // Any value, read and dropped (the parts of a message its reader does not use).
    void skip() {
        Nested nested(*this);
        char c = peek();
        if (c == '"') { string(); return; }
        if (c == 't' || c == 'f') { boolean(); return; }
        if (c == 'n') { keyword("null"); return; }
        if (c == '[') {
            ++at_;
            for (bool first = true; more(']', first);) skip();
            return;
        }
        if (c == '{') {
            ++at_;
            for (bool first = true; more('}', first);) { string(); expect(':'); skip(); }
            return;
        }
        number();
    }
    // In an array or object opened before: whether another item follows (reading its comma).
    bool more(char close, bool& first) {
        if (take(close)) return false;
        if (!first) expect(',');
        first = false;
        return true;
    }
    std::size_t position() const { return at_; }
    void seek(std::size_t at) { at_ = at; }
    void end() {
        if (peek() != '\0' || at_ != text_.size()) fail("more after the message's end");
    }
    void fail(const std::string& why) {
        std::ostringstream where;
        where << why << " at byte " << at_ << " of the message";
        throw Error(where.str());
    }

    // Counts nesting, so that no message recurses past DEPTH.
    struct Nested {
        explicit Nested(Reader& reader) : reader_(reader) {
            if (++reader_.depth_ > DEPTH) reader_.fail("a value nested too deep");
        }
        ~Nested() { --reader_.depth_; }
        Reader& reader_;
    };

private:
    std::size_t skip_digits() {
        std::size_t start = at_;
        while (at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9') ++at_;
        return at_ - start;
    }
    const std::string& text_;
    std::size_t at_;
    int depth_;
};

inline void put_string(std::string& out, const std::string& bytes) {
    out += '"';
    for (std::string::const_iterator it = bytes.begin(); it != bytes.end(); ++it) {
        unsigned char c = *it;
        if (c == '"' || c == '\\') { out += '\\'; out += char(c); }
        else if (c >= 0x20 && c < 0x7f) out += char(c);
        else {
            char escaped[8];
            std::snprintf(escaped, sizeof escaped, "\\u%04x", unsigned(c));
            out += escaped;
        }
    }
    out += '"';
}

// Codec<T>::put writes a value, Codec<T>::get reads one into a value of type T.
template <class T, class Enable = void> struct Codec;

template <> struct Codec<bool> {
    static void put(std::string& out, bool value) { out += value ? "true" : "false"; }
    static void get(Reader& in, bool& value) { value = in.boolean(); }
};

template <> struct Codec<char> {
    static void put(std::string& out, char value) { put_string(out, std::string(1, value)); }
    static void get(Reader& in, char& value) {
        std::string bytes = in.string();
        if (bytes.size() != 1) in.fail("a char given as a string of other than one byte");
        value = bytes[0];
    }
};

template <class T>
struct Codec<T, typename std::enable_if<std::is_integral<T>::value && !std::is_same<T, bool>::value
                                        && !std::is_same<T, char>::value>::type> {
    static void put(std::string& out, T value) {
        std::ostringstream text;
        text << +value;  // + : a signed or unsigned char as its number
        out += text.str();
    }
    static void get(Reader& in, T& value) {
        std::string text = in.number();
        if (text.find_first_of(".eEIN") != std::string::npos)
            in.fail("an integer expected, and " + text + " is none");
        errno = 0;
        bool fits;
        // Without <limits>, which BigCode's include helper does not include: the candidate's
        // code sees no name it would not see in BigCode's program.
        const int bits = int(sizeof(T)) * 8;
        if (T(-1) < T(0)) {
            long long read = std::strtoll(text.c_str(), 0, 10);
            long long most = (long long)((~0ULL >> 1) >> (64 - bits));
            fits = errno == 0 && read >= -most - 1 && read <= most;
            value = T(read);
        } else {
            unsigned long long read = std::strtoull(text.c_str(), 0, 10);
            fits = errno == 0 && text[0] != '-' && read <= (~0ULL >> (64 - bits));
            value = T(read);
        }
        if (!fits) in.fail(text + " is out of the range of " + type_name(typeid(T)));
    }
};

// Each floating type read by its own function, and written with the digits that read back the
// same value (max_digits10).
inline void read_float(const char* text, float& value) { value = std::strtof(text, 0); }
inline void read_float(const char* text, double& value) { value = std::strtod(text, 0); }
inline void read_float(const char* text, long double& value) { value = std::strtold(text, 0); }
inline int digits(float) { return __FLT_DECIMAL_DIG__; }
inline int digits(double) { return __DBL_DECIMAL_DIG__; }
inline int digits(long double) { return __LDBL_DECIMAL_DIG__; }

template <class T>
struct Codec<T, typename std::enable_if<std::is_floating_point<T>::value>::type> {
    static void put(std::string& out, T value) {
        if (std::isnan(value)) { out += "NaN"; return; }
        if (std::isinf(value)) { out += value < 0 ? "-Infinity" : "Infinity"; return; }
        char text[64];
        std::snprintf(text, sizeof text, "%.*Lg", digits(value),
                      (long double)value);
        out += text;
    }
    static void get(Reader& in, T& value) {
        std::string text = in.number();
        if (text == "NaN") value = T(NAN);
        else if (text == "Infinity") value = T(INFINITY);
        else if (text == "-Infinity") value = -T(INFINITY);
        else read_float(text.c_str(), value);
    }
};

template <> struct Codec<std::string> {
    static void put(std::string& out, const std::string& value) { put_string(out, value); }
    static void get(Reader& in, std::string& value) { value = in.string(); }
};

template <class A, class B> struct Codec<std::pair<A, B> > {
    static void put(std::string& out, const std::pair<A, B>& value) {
        out += '[';
        Codec<A>::put(out, value.first);
        out += ',';
        Codec<B>::put(out, value.second);
        out += ']';
    }
    static void get(Reader& in, std::pair<A, B>& value) {
        Reader::Nested nested(in);
        in.expect('[');
        Codec<A>::get(in, value.first);
        in.expect(',');
        Codec<B>::get(in, value.second);
        in.expect(']');
    }
};

// A container as an array of its items, read back by adding each at its end; a map's items
// are its [key, value] pairs.
template <class C> struct Sequence {
    static void put(std::string& out, const C& value) {
        out += '[';
        for (typename C::const_iterator it = value.begin(); it != value.end(); ++it) {
            if (it != value.begin()) out += ',';
            Codec<typename C::value_type>::put(out, *it);
        }
        out += ']';
    }
    static void get(Reader& in, C& value) {
        Reader::Nested nested(in);
        value.clear();
        in.expect('[');
        for (bool first = true; in.more(']', first);) {
            typename C::value_type item;
            Codec<typename C::value_type>::get(in, item);
            value.insert(value.end(), item);
        }
    }
};

template <class C> struct Pairs {
    typedef typename std::remove_const<typename C::key_type>::type Key;
    typedef typename C::mapped_type Mapped;
    static void put(std::string& out, const C& value) {
        out += '[';
        for (typename C::const_iterator it = value.begin(); it != value.end(); ++it) {
            if (it != value.begin()) out += ',';
            Codec<std::pair<Key, Mapped> >::put(out, std::pair<Key, Mapped>(it->first,
                                                                            it->second));
        }
        out += ']';
    }
    static void get(Reader& in, C& value) {
        Reader::Nested nested(in);
        value.clear();
        in.expect('[');
        for (bool first = true; in.more(']', first);) {
            std::pair<Key, Mapped> item;
            Codec<std::pair<Key, Mapped> >::get(in, item);
            value.insert(value.end(), item);
        }
    }
};

template <class T, class A> struct Codec<std::vector<T, A> > : Sequence<std::vector<T, A> > {};
template <class T, class A> struct Codec<std::list<T, A> > : Sequence<std::list<T, A> > {};
template <class T, class A> struct Codec<std::deque<T, A> > : Sequence<std::deque<T, A> > {};
template <class T, class L, class A>
struct Codec<std::set<T, L, A> > : Sequence<std::set<T, L, A> > {};
template <class T, class L, class A>
struct Codec<std::multiset<T, L, A> > : Sequence<std::multiset<T, L, A> > {};
template <class K, class V, class L, class A>
struct Codec<std::map<K, V, L, A> > : Pairs<std::map<K, V, L, A> > {};
template <class K, class V, class L, class A>
struct Codec<std::multimap<K, V, L, A> > : Pairs<std::multimap<K, V, L, A> > {};

// The types a boost::any may hold to cross, each under its name; the tests' any_cast then finds
// the same type the candidate's value had.
#define HUMANFIX_WIRE_ANY_TYPES(X) \
    X(bool, "bool") X(char, "char") X(int, "int") X(long, "long") X(long long, "long long") \
    X(unsigned, "unsigned int") X(unsigned long, "unsigned long") \
    X(unsigned long long, "unsigned long long") X(float, "float") X(double, "double") \
    X(std::string, "string")

template <> struct Codec<boost::any> {
    static void put(std::string& out, const boost::any& value) {
        if (value.empty()) { out += "{\"empty\":null}"; return; }
#define HUMANFIX_WIRE_PUT(T, NAME) \
        if (value.type() == typeid(T)) { \
            out += "{\"" NAME "\":"; \
            Codec<T>::put(out, boost::any_cast<T>(value)); \
            out += '}'; \
            return; \
        }
        HUMANFIX_WIRE_ANY_TYPES(HUMANFIX_WIRE_PUT)
#undef HUMANFIX_WIRE_PUT
        throw Error("a boost::any holding " + type_name(value.type()) + ", which cannot "
                    "cross (it may hold bool, char, int, long, long long, their unsigned "
                    "types, float, double or string)");
    }
    static void get(Reader& in, boost::any& value) {
        Reader::Nested nested(in);
        in.expect('{');
        std::string name = in.string();
        in.expect(':');
        if (name == "empty") { in.keyword("null"); value = boost::any(); }
#define HUMANFIX_WIRE_GET(T, NAME) \
        else if (name == NAME) { T held; Codec<T>::get(in, held); value = held; }
        HUMANFIX_WIRE_ANY_TYPES(HUMANFIX_WIRE_GET)
#undef HUMANFIX_WIRE_GET
        else in.fail("a boost::any of an unknown type");
        in.expect('}');
    }
};
#undef HUMANFIX_WIRE_ANY_TYPES

template <class T> std::string encoded(const T& value) {
    std::string out;
    Codec<T>::put(out, value);
    return out;
}

template <class T> T decoded(Reader& in) {
    T value;
    Codec<T>::get(in, value);
    return value;
}

// A line from the pipe at `fd`, at most MESSAGE_BYTES; false at the end of the pipe.
inline bool read_line(FILE* pipe, std::string& line) {
    line.clear();
    int c;
    while ((c = getc(pipe)) != EOF && c != '\n') {
        if (line.size() >= MESSAGE_BYTES) throw Error("a message longer than 16 MiB");
        line += char(c);
    }
    if (c == EOF && !line.empty()) throw Error("a message cut off before its end");
    return c != EOF;
}

inline bool write_line(FILE* pipe, const std::string& line) {
    return std::fwrite(line.data(), 1, line.size(), pipe) == line.size()
           && std::fputc('\n', pipe) != EOF && std::fflush(pipe) == 0;
}

inline FILE* opened(int fd, const char* mode) {
    FILE* pipe = fdopen(fd, mode);
    if (!pipe) {
        std::fprintf(stderr, "error: descriptor %d, a pipe of the calls, is not open\n", fd);
        std::exit(2);
    }
    return pipe;
}

// The arguments of one call, read in order by their declared types.
class Call {
public:
    explicit Call(const std::string& line) : in_(line), first_(true) {
        std::size_t args = 0;
        in_.expect('{');
        for (bool first = true; in_.more('}', first);) {
            std::string key = in_.string();
            in_.expect(':');
            if (key == "args" && !args) args = in_.position() + 1;
            in_.skip();
        }
        in_.end();
        if (!args) throw Error("a call without its arguments");
        in_.seek(args - 1);
        in_.expect('[');
    }
    template <class T> void arg(T& value) {
        if (!in_.more(']', first_)) throw Error("a call with too few arguments");
        Codec<T>::get(in_, value);
    }
    void done() {
        if (!in_.take(']')) throw Error("a call with too many arguments");
    }

private:
    Reader in_;
    bool first_;
};

inline std::string raised(const std::string& type, const std::string& what) {
    std::string out = "{\"raise\":{\"type\":";
    put_string(out, type);
    out += ",\"args\":[";
    put_string(out, what.substr(0, 2000));
    return out + "]}}";
}

inline std::string refused(const std::string& why) {
    std::string out = "{\"refused\":";
    put_string(out, why);
    return out + "}";
}

// The candidate's main: each call read from CALLS_IN is answered on CALLS_OUT with what
// `answer` (the entry point called with the call's arguments) returns, encoded, or what it threw.
template <class Answer> int answer_calls(Answer answer) {
    FILE* calls = opened(CALLS_IN, "r");
    FILE* answers = opened(CALLS_OUT, "w");
    std::string line, reply;
    while (read_line(calls, line)) {
        try {
            Call call(line);
            reply = "{\"value\":" + answer(call) + "}";
        } catch (const Error& error) {
            reply = refused(error.what());
        } catch (const std::exception& error) {
            reply = raised(type_name(typeid(error)), error.what());
        } catch (...) {
            std::type_info* type = abi::__cxa_current_exception_type();
            reply = raised(type ? type_name(*type) : "an exception", "");
        }
        if (reply.size() >= MESSAGE_BYTES) reply = refused("an answer longer than 16 MiB");
        if (!write_line(answers, reply)) return 1;
    }
    return 0;
}

inline void append_args(std::string&) {}
template <class T, class... Rest>
void append_args(std::string& out, const T& value, const Rest&... rest) {
    if (out.size() > 1) out += ',';
    Codec<T>::put(out, value);
    append_args(out, rest...);
}

// The tests' side of a call fails the tests with a line naming the call: the process ends
// with status 1, so no check after it runs.
inline void failed(const std::string& name, const std::string& args, const std::string& why) {
    std::string shown = args.size() > SHOWN_CHARS ? args.substr(0, SHOWN_CHARS) + "..." : args;
    std::fflush(stdout);
    std::fprintf(stderr, "error: the call %s(%s) %s\n", name.c_str(), shown.c_str(),
                 why.c_str());
    std::fflush(stderr);
    std::_Exit(1);
}

// The tests' stub: sends the call on CALLS_OUT and returns the answer read from CALLS_IN as a
// value of the declared return type R.
inline FILE* tests_pipe(int fd) {
    static FILE* calls = opened(CALLS_OUT, "w");
    static FILE* answers = opened(CALLS_IN, "r");
    return fd == CALLS_OUT ? calls : answers;
}

template <class R, class... Args> R call(const char* name, const Args&... args) {
    FILE* calls = tests_pipe(CALLS_OUT);
    FILE* answers = tests_pipe(CALLS_IN);
    std::string listed = "[";
    append_args(listed, args...);
    std::string shown = listed.substr(1);
    std::string line;
    try {
        if (!write_line(calls, "{\"args\":" + listed + "],\"kwargs\":[],\"limit\":null}")
            || !read_line(answers, line))
            failed(name, shown, "got no answer: the candidate's process ended");
        Reader in(line);
        in.expect('{');
        std::string key = in.string();
        in.expect(':');
        if (key == "value") {
            R value = decoded<R>(in);
            in.expect('}');
            in.end();
            return value;
        }
        if (key == "raise") {
            Reader::Nested nested(in);
            std::string type, what;
            in.expect('{');
            for (bool first = true; in.more('}', first);) {
                std::string field = in.string();
                in.expect(':');
                if (field == "type") type = in.string();
                else if (field == "args" && in.peek() == '[') {
                    in.expect('[');
                    for (bool item = true; in.more(']', item);) {
                        if (what.empty() && in.peek() == '"') what = in.string();
                        else in.skip();
                    }
                } else in.skip();
            }
            failed(name, shown, "threw " + type.substr(0, SHOWN_CHARS)
                   + (what.empty() ? "" : ": " + what.substr(0, SHOWN_CHARS * 5)));
        }
        if (key == "refused") failed(name, shown, "has an answer that cannot cross: "
                                     + in.string().substr(0, SHOWN_CHARS * 5));
        in.fail("an answer that is neither a value, an exception nor a refusal");
    } catch (const Error& error) {
        failed(name, shown, std::string("has an answer that cannot be read: ") + error.what());
    }
    return R();
}

}  // namespace humanfix_wire

#endif
