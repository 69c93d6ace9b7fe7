// libFuzzer entry point for Qeo Data Model files and the DDS side built from them (built by
// scripts/fuzz). Input: QDM XML up to the first NUL, then a JSON sample. Parsing succeeds or
// throws an error with a reason; for every struct the schema, the DDS type program and, for a
// sample that conforms, the write → read of a DDS sample work without trapping, and reading
// back what was written gives what a second write and read gives.
import QeoDDS
import QeoQDM
import SwitchyardCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzQDM(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let end = bytes.firstIndex(of: 0) ?? bytes.endIndex
    let text = String(decoding: bytes[..<end], as: UTF8.self)
    let sample = (try? JSONValue(parsing: bytes[end...].dropFirst())) ?? .object([:])
    let model: QDMModel
    do throws(QDMError) {
        // A file in a folder that does not exist: an include cannot read anything real.
        model = try QDMParser.parse(text, file: "/nonexistent/fuzz.qdm")
    } catch {
        precondition(!error.reason.isEmpty, "an error without a reason")
        return 0
    }
    for name in model.structs.keys.sorted() {
        _ = model.schema(of: name)
        guard let program = try? DDSTypeProgram(model: model, root: name) else { continue }
        guard let value = try? model.conform(sample, to: name) else { continue }
        let samples = DDSSamples(model: model, program: program)
        let first = roundTrip(value, samples)
        precondition(roundTrip(first, samples) == first, "a DDS sample does not read back what was written")
    }
    return 0
}

private func roundTrip(_ value: JSONValue, _ samples: DDSSamples) -> JSONValue {
    let pointer = samples.allocate()
    defer { samples.release(pointer) }
    samples.write(value, into: pointer)
    return samples.read(pointer)
}
