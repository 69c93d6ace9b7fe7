import SwitchyardABI
import SwitchyardBridge
import Testing

/// `sy_bytes` comparisons read views a plugin hands over, which may be malformed.
@Suite struct ByteViewComparisonTests {
    @Test func aViewEqualsTheSameBytesInEveryForm() {
        let bytes: [UInt8] = Array("publish".utf8)
        bytes.withUnsafeBufferPointer { buffer in
            let view = sy_bytes(data: buffer.baseAddress, length: buffer.count)
            #expect(view.equals("publish" as String))
            #expect(view.equals("publish" as StaticString))
            #expect(view.equals(bytes))
            #expect(view.hasPrefix("pub"))
            #expect(!view.equals("publisH" as String))
            #expect(!view.equals(Array("publis".utf8)))
            #expect(!view.hasPrefix("sub"))
        }
        let empty = sy_bytes(data: nil, length: 0)
        #expect(empty.equals("" as String) && empty.equals([]) && empty.equals("" as StaticString))
        #expect(!empty.equals("in" as String))
    }

    @Test func aLengthWithoutBytesEqualsNothing() {
        // What a hostile or broken plugin may pass: a length and a null pointer.
        let malformed = sy_bytes(data: nil, length: 2)
        #expect(!malformed.equals("in" as String))
        #expect(!malformed.equals("in" as StaticString))
        #expect(!malformed.equals(Array("in".utf8)))
        #expect(!malformed.hasPrefix("i"))
        #expect(malformed.hasPrefix(""))
    }
}
