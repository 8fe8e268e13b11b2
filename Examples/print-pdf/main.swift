// Prints a SMART Health Card as a PDF in memory with HealthCardsPrint (Cairo, Pango, librsvg; the QR through
// HealthCardsQR): the spec's example 00 JWS is read back into a sheet (name, doses), laid out with its QR and a
// wallet cut-out, and written as PDF bytes. Public API only; nothing is written. Exits 0 when the sheet holds the
// spec's patient and three doses on their dates and the bytes are one whole PDF file.
import HealthCardsCore
import HealthCardsQR
import HealthCardsPrint

#if canImport(Glibc)
    import Glibc
#endif

func fail(_ what: String) -> Never {
    print("print-pdf: \(what)")
    exit(1)
}

/// The repository's root: the working folder when it holds Tests/Fixtures, else found from this file's place.
let root: String = {
    if access("Tests/Fixtures", F_OK) == 0 { return "." }
    return "/" + #filePath.split(separator: "/").dropLast(3).joined(separator: "/")
}()
let today = Clock.todayUTC(1_700_000_000)  // a fixed date (2023-11-14), printed on the page

do {
    var jwsText = String(decoding: try FileIO.read(root + "/Tests/Fixtures/spec-examples/example-00-d-jws.txt"), as: UTF8.self)
    while jwsText.last == "\n" { jwsText.removeLast() }
    let jws = JWS(compact: jwsText)

    // What the card says (its payload, read back; the signature is a verifier's business, not the printer's).
    let sheet = try PDFStage.sheet(jws, today: today)
    print("sheet: \(sheet.name ?? "no name"), born \(sheet.birthDate ?? "?"), \(sheet.kind), issuer \(sheet.issuer)")
    for dose in sheet.doses { print("  dose \(dose.date): \(dose.vaccine ?? dose.code)") }
    guard sheet.name?.contains("Anyperson") == true, sheet.doses.map(\.date) == ["2021-01-01", "2021-01-29", "2022-09-05"]
    else { fail("the sheet does not hold the spec's patient and doses") }

    let settings = PrintSettings(paper: .a4, issuerName: "Example Issuer (demo)", today: today)
    let card = try CardPrinter(settings: settings).print(sheet, codes: try PDFStage.codes(jws))
    let pdf = try card.pdf()
    let head = String(decoding: pdf.prefix(8), as: UTF8.self)
    let tail = String(decoding: pdf.suffix(16), as: UTF8.self)
    print("PDF of \(pdf.count) bytes, \(card.pageCount) page(s), starts \(head.debugDescription)")
    guard head.hasPrefix("%PDF-1."), tail.contains("%%EOF"), card.pageCount >= 1 else {
        fail("the bytes are not one whole PDF file (no %PDF- header or no %%EOF)")
    }
} catch {
    fail("\(error)")
}
print("print-pdf: OK")
