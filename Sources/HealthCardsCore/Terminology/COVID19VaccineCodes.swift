/// The COVID-19 vaccines coded in SNOMED CT or ICD-11 MMS, so that a card whose dose is coded in one of them gets
/// the deprecated `#covid19` type under the legacy type policy, as a CVX-coded one does (`Terminology.isCOVID19Code`).
///
/// The SHC Vaccination & Testing IG binds `Immunization.vaccineCode` to CVX (enumerated), SNOMED CT (descendants of
/// 787859002 |Vaccine product|) and ICD-11 MMS, and lists no COVID-19 subset of the last two; these are the
/// extensional COVID-19 lists of terminology.smarthealth.cards (github.com/dvci/shc-terminology):
/// - SNOMED CT: `input/fsh/immunization-covid-snomed.fsh`, version 2023.1 (97 concepts of several national
///   extensions), plus the international edition's 1119305005 |SARS-CoV-2 antigen vaccine| (the IG's own example,
///   `examples/byCodeSystem/snomed_immunization.json`) and 1119349007 |SARS-CoV-2 mRNA vaccine|. SNOMED CT concepts of
///   this value set: SNOMED International, CC BY 4.0.
/// - ICD-11 MMS: `input/fsh/immunization-covid-icd11.fsh`, release 2023-01, the descendants of XM68M6 (COVID-19
///   vaccines) and XM68M6 itself. ICD-11, World Health Organization (WHO) 2019/2021, https://icd.who.int/browse11,
///   CC BY-ND 3.0 IGO: the codes are copied unchanged, without their titles.
/// Only the IG's ICD-11 system URI (`Terminology.icd11`) is recognised; the lists' older `http://id.who.int/icd11/mms`
/// is not the IG's and is not read as ICD-11.
public enum COVID19VaccineCodes {
    /// SNOMED CT concept identifiers of COVID-19 vaccines.
    public static let snomedCT: Set<String> = [
        "1119305005", "1119349007", "1031000172108", "1401000220108", "1411000220106", "1421000220104",
        "10871000172106", "10891000172107", "10901000172106", "28571000087109", "28581000087106", "28761000087108",
        "28951000087107", "28961000087105", "29171000087106", "30151000087105", "31301000087101", "31311000087104",
        "31341000087103", "31431000087100", "33201000087108", "33211000087105", "33221000087102", "33361000087101",
        "33391000087109", "33401000087107", "33411000087109", "33421000087101", "33431000087104", "33441000087105",
        "33451000087108", "33461000087106", "33471000087102", "33581000087104", "33881000087102", "34591000087100",
        "34601000087108", "34611000087105", "34921000087108", "35651000087105", "37311000087109", "37651000087101",
        "62051000220105", "125071000220108", "125081000220106", "125091000220109", "125101000220104", "125111000220101",
        "125121000220108", "384671000221101", "399651000221108", "399661000221105", "399681000221103",
        "399691000221100",
        "399701000221100", "399771000221108", "399781000221106", "399801000221105", "399811000221108",
        "399821000221103",
        "399861000221106", "399871000221102", "399881000221104", "399891000221101", "399901000221102",
        "399911000221104",
        "424531000221101", "424541000221108", "424551000221105", "424561000221107", "424571000221103",
        "424581000221100",
        "424591000221102", "424601000221107", "424611000221105", "424621000221100", "424631000221102",
        "424641000221109",
        "424651000221106", "424661000221108", "424671000221104", "424681000221101", "424691000221103",
        "424701000221103",
        "424711000221100", "424721000221105", "424731000221108", "424741000221101", "424751000221104",
        "424781000221109",
        "424791000221107", "424801000221108", "424821000221101", "424831000221103", "424971000221108",
        "425001000221100",
        "425011000221102", "425031000221105", "425051000221101",
    ]

    /// ICD-11 MMS codes of COVID-19 vaccines: XM68M6 and its descendants.
    public static let icd11: Set<String> = [
        "XM68M6", "XM1NL1", "XM7HT3", "XM8866", "XM9TQ1", "XM1G90",
        "XM85P5", "XM9FQ7", "XM97N6", "XM2YG8", "XM0K39", "XM1AU2",
        "XM5DF6", "XM9QW8", "XM4YL8", "XM97T2", "XM6QV1", "XM1AG7",
        "XM5ZJ4", "XM5QM6", "XM0CX4", "XM5JC5", "XM3CT4", "XM3PG0",
        "XM4EC8", "XM6SZ8", "XM0RV9", "XM3SK8", "XM9P21", "XM9T65",
        "XM9N08", "XM1J92", "XM6AT1", "XM52P3", "XM0GQ8", "XM8NQ0",
        "XM3DT5",
    ]
}
